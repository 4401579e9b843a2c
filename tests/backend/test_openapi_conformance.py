"""The published contract matches the live platform: schemathesis against uvicorn on loopback.

Every operation found in the document (so a route added later is covered without an edit here) is
driven with generated valid and invalid requests, and every answer is checked against the document:
status, content type, headers, body schema, and that invalid data is refused.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.generation import GenerationMode
from schemathesis.schemas import BaseSchema

from osbp.backend.app import create_app
from osbp.backend.serving import PlatformServer
from tests.support.bookwell import make_settings

pytestmark = pytest.mark.integration

CALL_TIMEOUT = 10.0  # seconds: a request the platform never answers is a failure, not a hung suite

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
]


_SETTINGS = make_settings(rate_limit_quota=1_000_000)  # the API under test, not the limiter
# Every operation of the document, read in process at collection; each is then driven on the live server.
_OPERATIONS = [
    (method.upper(), path)
    for path, item in create_app(_SETTINGS).openapi()["paths"].items()
    for method in item
    if method in {"get", "put", "post", "delete", "patch"}
]


@pytest.fixture(scope="module")
def live() -> Iterator[tuple[BaseSchema, str]]:
    """The document as a client finds it, read from a real server on loopback, and that server's URL."""
    with PlatformServer(_SETTINGS) as server:
        yield schemathesis.openapi.from_url(f"{server.base_url}/openapi.json"), server.base_url


@pytest.mark.parametrize(
    "mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=lambda mode: mode.value
)
@pytest.mark.parametrize(("method", "path"), _OPERATIONS, ids=[f"{m} {p}" for m, p in _OPERATIONS])
def test_every_live_answer_matches_the_published_contract(live, method, path, mode):
    """OpenAPI 3.1 (platform choice: the contract is exact): each generated request's answer conforms."""
    schema, base_url = live
    operation = schema[path][method]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    def answer_conforms(case):
        case.call_and_validate(checks=CHECKS, timeout=CALL_TIMEOUT)

    try:
        answer_conforms()
    finally:
        # Generated calls to the test surface may have moved the clock, armed a failure, changed the
        # catalog or put a fault profile in force: back to the seeds, so every operation is fuzzed against
        # the same platform. The test surface is never faulted, so no generated profile can stall this
        # reset, and every later operation runs with none in force (a fault rule holds 120 s at most).
        if method != "GET" and path.startswith("/_testing/"):
            assert httpx2.post(f"{base_url}/_testing/reset").status_code == 200
            assert httpx2.get(f"{base_url}/_testing/faults").json()["rules"] == []
