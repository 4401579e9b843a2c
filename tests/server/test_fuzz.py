"""A bounded fuzz of the real MCP server over the reference adapter and the real platform on loopback.

Every tool gets schema-valid arguments generated from its published JSON Schema, with free strings
biased toward hostile values (70,000-character strings, ``/``, ``../``, ``%2F``, ``?``, ``#``, NUL and
other C0 controls, unicode) and integers up to 2**53 - 1; booking.create also gets a valid request with
a few fields replaced, so calls reach the platform and the approved retry. Every answer must be a
Problem or a value of the envelope, never ``internal_adapter_error``, never a traceback or an exception
name, and the server must still answer a plain call afterwards.

``OSBP_FUZZ_EXAMPLES`` (examples per tool, default 25) runs it longer locally; the suite keeps the
default so the whole module stays well under a minute.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import count
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from osbp.backend.serving import PlatformServer
from osbp.backend.settings import BackendSettings
from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN
from osbp.protocol.clock import FixedClock
from osbp.protocol.core import OsbpCore
from osbp.protocol.models import TOOL_NAMES
from osbp.protocol.schemas import tool_input_schema
from osbp.protocol.tools import mcp_tool_name
from osbp.server.app import create_server
from osbp.server.audit import AuditLog
from tests.support.json_schema import from_schema
from tests.support.reference import CLEANING, DAY, MIDTOWN, NOW, OKAFOR, ORG, REYES, make_adapter

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("OSBP_FUZZ_EXAMPLES", "25"))
#: Text no answer may carry: the marks of a leaked traceback or exception.
LEAKS = ("Traceback", "Error:", "Exception", 'File "')
LONGEST = 70_000

#: Pieces a hostile string is made of: URL structure, escapes, controls, unicode.
PIECES = ["/", "../", "..", ".", "%2F", "%2f", "%2e%2e", "%", "?", "#", "&", "=", "\\", "\x00", "\x01"]
PIECES += ["\x1f", "\x7f", "\n", "\r\n", "\t", " ", "é", "\u202e", "\U0001d11e", "{", "}", "x"]
#: Real values, so generated calls also reach the platform's deeper paths.
REAL = [ORG, CLEANING, MIDTOWN, REYES, DAY, "10:00", f"booking:{ORG}", "+12125550199", "jane@example.org"]
REAL += ["apt_0123456789abcdef", "2026-05-05T08:00:00", "2026-05-05T23:59:59-04:00", "booking.create"]

STRINGS: st.SearchStrategy[str] = st.one_of(
    st.sampled_from(PIECES + REAL),
    st.lists(st.sampled_from(PIECES + REAL), min_size=1, max_size=5).map("".join),
    st.tuples(st.sampled_from([*PIECES, CLEANING]), st.integers(1, LONGEST)).map(
        lambda pair: (pair[0] * pair[1])[:LONGEST]
    ),
    st.text(max_size=24),  # any unicode but lone surrogates (which a JSON-RPC message cannot carry)
)

BASE_CREATE: dict[str, Any] = {
    "mandate": {
        "id": "mnd_fuzz",
        "expires_at": "2026-05-05T23:59:59-04:00",
        "allowed_actions": ["booking.create"],
        "organization_id": ORG,
        "earliest_start": f"{DAY}T08:00:00",
        "latest_end": f"{DAY}T18:00:00",
        "max_price": {"amount_minor": 15000, "currency": "USD"},
    },
    "idempotency_key": "fuzz",
    "service_id": CLEANING,
    "schedule_id": MIDTOWN,
    "provider_id": REYES,
    "date": DAY,
    "time": "10:00",
    "customer": {"display_name": "Jane Customer", "phone": "+12125550199"},
}
#: Midtown's open quarter hours on DAY, so approved retries keep finding free slots.
TIMES = [f"{hour:02d}:{minute:02d}" for hour in range(9, 17) for minute in (0, 15, 30, 45)]
_TOP = ["service_id", "schedule_id", "provider_id", "date", "time", "verification_code", "idempotency_key"]
_CUSTOMER = ["display_name", "given_name", "family_name", "phone", "email"]
_SCOPES = ["service_ids", "schedule_ids", "provider_ids", "id", "organization_id"]


@st.composite
def near_valid_create(draw: st.DrawFn) -> dict[str, Any]:
    """A valid booking.create with up to three fields (top level, customer or mandate) made hostile."""
    top = draw(st.dictionaries(st.sampled_from(_TOP), STRINGS, max_size=3))
    customer = draw(st.dictionaries(st.sampled_from(_CUSTOMER), STRINGS, max_size=2))
    scope = draw(st.sampled_from(_SCOPES))
    mandate = dict(BASE_CREATE["mandate"])
    if draw(st.booleans()):
        mandate[scope] = draw(st.lists(STRINGS, max_size=2)) if scope.endswith("_ids") else draw(STRINGS)
    slot = {"time": draw(st.sampled_from(TIMES)), "provider_id": draw(st.sampled_from([REYES, OKAFOR]))}
    customer = BASE_CREATE["customer"] | customer
    return BASE_CREATE | slot | top | {"customer": customer, "mandate": mandate}


#: Real values laid over half the generated arguments, so hostile ids and contacts get past the checks
#: that would otherwise answer first (a calendar date, the organization's verification purpose).
ANCHORS: dict[str, dict[str, str]] = {
    "availability.find": {"date": DAY},
    "verification.send": {"purpose": f"booking:{ORG}"},
}


def arguments_for(tool: str) -> st.SearchStrategy[dict[str, Any]]:
    """Schema-valid arguments for ``tool``, hostile where its schema allows free strings."""
    generated = from_schema(tool_input_schema(tool), strings=STRINGS)
    if tool == "booking.create":
        return st.one_of(generated, near_valid_create())
    if tool in ANCHORS:
        return st.one_of(generated, generated.map(lambda arguments: arguments | ANCHORS[tool]))
    return generated


def leaks(text: str) -> list[str]:
    """The traceback marks in ``text``."""
    return [mark for mark in LEAKS if mark in text]


@dataclass
class FuzzTarget:
    """The real MCP server, connected in memory, called synchronously through a portal."""

    portal: BlockingPortal
    client: Client
    keys: Iterator[int] = field(default_factory=count)

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One tool call; the envelope after checking it carries no internal error and no traceback."""
        result = self.portal.call(self.client.call_tool, mcp_tool_name(tool), arguments)
        envelope = result.structured_content
        assert isinstance(envelope, dict), result
        texts = [getattr(item, "text", "") for item in result.content] + [json.dumps(envelope)]
        assert [mark for text in texts for mark in leaks(text)] == [], texts[0][:2000]
        code = envelope.get("problem", {}).get("code")
        assert code != "internal_adapter_error", (tool, envelope["problem"])
        return envelope

    def create(self, arguments: dict[str, Any]) -> None:
        """booking.create under a fresh key, and its approved retry when the preflight asks for one."""
        if arguments.get("idempotency_key") == BASE_CREATE["idempotency_key"]:
            arguments = arguments | {"idempotency_key": f"fuzz-{next(self.keys)}"}
        envelope = self.call("booking.create", arguments)
        if envelope.get("problem", {}).get("code") == "requires_user_confirmation":
            match = APPROVAL_TOKEN_PATTERN.search(envelope["problem"]["message"])
            assert match is not None
            self.call("booking.create", arguments | {"approval": {"confirmed": True, "token": match[1]}})


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzTarget]:
    """The platform on loopback (quota high enough for the fuzz) and the server over the real adapter."""
    tmp = tmp_path_factory.mktemp("fuzz")
    backend = BackendSettings(db=":memory:", port=0, now=NOW, enable_testing=True, rate_limit_quota=10**9)
    clock = FixedClock(NOW)
    with PlatformServer(backend) as platform, start_blocking_portal("asyncio") as portal:
        # Defaults configured, so a generated call that omits the ids still reaches the platform.
        adapter: OsbpCore = make_adapter(
            platform.base_url,
            tmp / "state.sqlite3",
            clock,
            default_service_id=CLEANING,
            default_schedule_id=MIDTOWN,
        )
        audit = AuditLog(tmp / "audit" / "events.jsonl")
        server = create_server(adapter, audit, clock=clock)
        with portal.wrap_async_context_manager(Client(server)) as client:
            yield FuzzTarget(portal, client)
        portal.call(adapter.aclose)
        audit.close()


_FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_hostile_schema_valid_calls_never_surface_an_internal_error(tool: str, target: FuzzTarget) -> None:
    """OSBP spec, Result Envelope and Security and Privacy: bad input is a specific Problem, never
    internal_adapter_error or a traceback, and the server keeps answering (property)."""

    @_FUZZ
    @given(arguments=arguments_for(tool))
    def check(arguments: dict[str, Any]) -> None:
        if tool == "booking.create":
            target.create(arguments)
        else:
            target.call(tool, arguments)

    check()
    plain = target.call("service.describe", {"service_id": CLEANING})
    assert (plain["ok"], plain["value"]["id"]) == (True, CLEANING)
