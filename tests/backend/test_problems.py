"""Every error is one problem+json shape; unexpected failures are a bare 500 problem, logged."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from osbp.backend import appointments
from osbp.backend.app import create_app
from osbp.backend.faults import ERROR_CODES
from osbp.backend.openapi import EDGE_CODES, EXAMPLES, EXTENSIONS, FAULT_CODES
from osbp.backend.problems import TITLES, Problem, ProblemError
from tests.support.bookwell import booking, create, make_settings
from tests.support.code_literals import code_literals
from tests.support.logs import fields

PROBLEM_KEYS = {"type", "title", "status", "detail", "code", "request_id"}


def test_problem_document_has_the_rfc_9457_members_and_a_machine_code(client):
    """RFC 9457: type, title, status, detail, plus a stable machine code."""
    response = client.get("/api/organizations/nobody")
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert set(body) >= PROBLEM_KEYS
    assert body["status"] == response.status_code == 404
    assert body["code"] == "organization_not_found"
    assert body["type"] == "https://developer.bookwell.example/problems/organization-not-found"


@pytest.mark.parametrize("code", sorted(TITLES))
def test_every_documented_code_renders_with_its_status(code):
    """Platform choice: the code table is the single source of status and title."""
    body = Problem(code, "detail").body()
    assert body["code"] == code
    assert body["status"] == TITLES[code][0]
    assert body["type"].endswith(code.replace("_", "-"))


def test_validation_errors_name_the_fields_without_echoing_values(client):
    """Platform choice: malformed input → 400 problem; values (possibly contact data) are not echoed."""
    response = client.post(
        "/api/organizations/gus_notary/verifications", json={"purpose": 5, "phone": "+12125550100", "x": 1}
    )
    assert response.status_code == 400
    fields = {item["field"] for item in response.json()["errors"]}
    assert {"body.purpose", "body.x"} <= fields


def test_unexpected_exception_is_a_500_problem_without_a_stack_trace(monkeypatch, caplog):
    """Platform choice (errors): no stack trace ever on the wire; the failure is logged with the request
    id."""

    def explode(*_args, **_kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(appointments, "get", explode)
    caplog.set_level(logging.ERROR)
    with TestClient(create_app(make_settings())) as client:
        response = client.get("/api/organizations/carolyns_dental/appointments/apt_x")
    assert response.status_code == 500
    assert response.json()["code"] == "internal_error"
    assert "secret internals" not in response.text
    assert "Traceback" not in response.text
    assert response.headers["server"] == "Bookwell/0.1.0"
    record = next(item for item in caplog.records if item.getMessage() == "unhandled_error")
    assert record.exc_info is not None
    assert fields(record)["request_id"] == response.headers["x-request-id"]


def test_a_raised_problem_renders_once_with_the_documented_member_order(client):
    """RFC 9457: a refusal raised deep in the service layer is one problem+json body, members in order."""
    response = client.get("/api/organizations/carolyns_dental/services/nope")
    assert response.headers["content-type"] == "application/problem+json"
    assert list(response.json()) == ["type", "title", "status", "detail", "code", "request_id"]
    assert response.json()["code"] == "service_not_found"


def test_a_raised_problem_keeps_its_headers_and_extension_members(client):
    """RFC 9110 Retry-After: a raised in-flight refusal still carries its header and extras."""
    client.post("/_testing/arm", json={"organization_id": "carolyns_dental", "outcome": "rate_limited"})
    limited = create(client, "carolyns_dental", booking())
    assert (limited.status_code, limited.headers["retry-after"]) == (429, "1")
    dated = client.get(
        "/api/organizations/carolyns_dental/availability",
        params={"service_id": "carolyns_dental_cleaning", "date": "2026-02-30"},
    )
    assert dated.json()["errors"] == [{"field": "query.date", "message": "not a calendar date"}]
    assert list(dated.json())[-1] == "errors"


def test_a_problem_error_takes_its_status_from_the_code_table():
    """Platform choice: TITLES is the one source of a code's status, so a raise cannot contradict it."""
    error = ProblemError("slot_taken", "taken", headers={"Retry-After": "1"})
    assert (error.code, error.problem.status, error.problem.headers) == (
        "slot_taken",
        409,
        {"Retry-After": "1"},
    )
    with pytest.raises(ValueError, match="unknown problem code 'no_such_code'"):
        ProblemError("no_such_code", "detail")


REPO = Path(__file__).resolve().parents[2]


def test_every_code_a_platform_module_spells_is_in_the_code_table():
    """Platform choice (one table): a code raised, compared or documented anywhere is a `TITLES` code."""
    spelled = code_literals(REPO, "backend")
    assert len({item.code for item in spelled}) > 20
    assert [item for item in spelled if item.code not in TITLES] == []
    documented = {*EXTENSIONS, *EXAMPLES, *EDGE_CODES, *FAULT_CODES, *ERROR_CODES.values()}
    assert documented - set(TITLES) == set()
    assert {status for status in ERROR_CODES} == {TITLES[code][0] for code in ERROR_CODES.values()}


def test_a_problem_of_an_unknown_code_is_refused_when_it_is_made():
    """Platform choice: a typo in a code fails where the problem is built, not later when it renders."""
    with pytest.raises(ValueError, match="unknown problem code 'slot_takne'"):
        Problem("slot_takne", "detail")


def test_the_api_reference_lists_exactly_the_code_table():
    """Platform choice (docs that cannot drift): docs/backend-api.md's error table is `TITLES`, with the
    same status for every code."""
    text = (REPO / "docs" / "backend-api.md").read_text(encoding="utf-8")
    table = text.split("| status | `code` | when | extra members |", 1)[1].split("\n\n", 1)[0]
    listed: set[tuple[str, int]] = set()
    for status, codes in re.findall(r"^\| (\d{3}) \| ([^|]+) \|", table, re.M):
        listed.update((code, int(status)) for code in re.findall(r"`([a-z_]+)`", codes))
    assert listed == {(code, status) for code, (status, _title) in TITLES.items()}
