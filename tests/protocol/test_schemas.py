"""The checked-in JSON Schemas: no drift, and they accept every published v0.1.0 input shape."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs installed; used only to check the schemas
import pytest

from osbp.protocol.models import TOOL_NAMES, FailureEnvelope, Problem, Receipt, SuccessEnvelope
from osbp.protocol.schemas import SCHEMA_DIR, all_schemas, main, tool_input_schema, tool_result_schema
from osbp.protocol.tools import TOOLS, mcp_tool_name, tool_spec
from tests.protocol.test_models import SPEC_CREATE

SPEC_INPUTS: dict[str, list[dict[str, Any]]] = {
    "service.describe": [{"service_id": "service_123"}, {}],
    "availability.find": [
        {
            "service_id": "service_123",
            "schedule_id": "schedule_123",
            "date": "2026-05-05",
            "provider_id": "provider_123",
        },
        {"date": "2026-05-05"},
    ],
    "policy.explain": [{"service_id": "service_123"}, {}],
    "verification.send": [
        {
            "customer": {"phone": "+15555550100", "email": "jane@example.com"},
            "purpose": "booking:org_01jw3z8x9k2m4n6p8r0s1t3v5w",
        },
        {},
    ],
    "verification.verify": [
        {
            "customer": {"phone": "+15555550100", "email": "jane@example.com"},
            "purpose": "booking:org_01jw3z8x9k2m4n6p8r0s1t3v5w",
            "code": "123456",
        },
        {"code": "123456"},
    ],
    "booking.create": [SPEC_CREATE, {**SPEC_CREATE, "provider_id": ""}],
    "booking.status": [{"booking_id": "appointment_123", "customer": {"phone": "+15555550100"}}, {}],
    "handoff.request": [
        {
            "reason": "requires_payment_handoff",
            "message": "This service requires a deposit. "
            "Please complete the booking with the merchant directly.",
            "mandate_id": "mnd_2026_05_01_001",
        },
        {"reason": "r", "message": "m"},
    ],
}


def validator(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_checked_in_schemas_match_the_models(tmp_path: Path) -> None:
    """Regenerating the schemas changes nothing (platform choice: a test fails on drift)."""
    assert main(["--check"]) == 0
    assert main(["--out", str(tmp_path)]) == 0
    for path in tmp_path.iterdir():
        assert (SCHEMA_DIR / path.name).read_text(encoding="utf-8") == path.read_text(encoding="utf-8")
    assert sorted(p.name for p in SCHEMA_DIR.glob("*.json")) == sorted(all_schemas())


def test_drift_is_detected(tmp_path: Path) -> None:
    """--check fails when a checked-in file differs from the models (platform choice)."""
    assert main(["--out", str(tmp_path)]) == 0
    (tmp_path / "booking.create.input.json").write_text("{}\n", encoding="utf-8")
    assert main(["--check", "--out", str(tmp_path)]) == 1


@pytest.mark.parametrize(
    ("tool", "example"), [(tool, ex) for tool, examples in SPEC_INPUTS.items() for ex in examples]
)
def test_every_published_input_shape_is_accepted(tool: str, example: dict[str, Any]) -> None:
    """The schemas accept the spec's v0.1.0 inputs and the minimal required shapes (platform choice)."""
    validator(tool_input_schema(tool)).validate(example)
    tool_spec(tool).input_model.model_validate(example)


def test_required_fields_are_exactly_the_published_ones() -> None:
    """Required fields per tool match the published list; the others have none (OSBP spec, Tool Set)."""
    required = {name: sorted(tool_input_schema(name).get("required", [])) for name in TOOL_NAMES}
    assert required == {
        "service.describe": [],
        "availability.find": ["date"],
        "policy.explain": [],
        "verification.send": [],
        "verification.verify": ["code"],
        "booking.create": sorted(
            ["mandate", "idempotency_key", "service_id", "schedule_id", "provider_id", "date", "time"]
        ),
        "booking.status": [],
        "handoff.request": ["message", "reason"],
    }


def _with(path: list[str], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(SPEC_CREATE)
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    "bad",
    [
        _with(["idempotency_key"], ""),
        _with(["approval"], {"confirmed": True}),
        _with(["approval"], {"confirmed": False, "token": "t"}),
        _with(["approval"], {"confirmed": "true", "token": "t"}),
        _with(["mandate", "max_price", "amount_minor"], "9500"),
        _with(["mandate", "max_price", "amount_minor"], -1),
        _with(["mandate", "max_price", "amount_minor"], 2**53),
        _with(["mandate", "max_price"], {"amount_minor": 100}),
        _with(["mandate", "allowed_actions"], ["booking.cancel"]),
        _with(["mandate", "extra"], 1),
        _with(["customer"], None),
        _with(["surprise"], True),
    ],
)
def test_schema_rejects_wrong_types_and_unknown_fields(bad: dict[str, Any]) -> None:
    """Inputs are closed and exact: no coercion, no nulls, approval fully required (platform choice)."""
    assert list(validator(tool_input_schema("booking.create")).iter_errors(bad))


def test_validator_owned_defects_pass_the_schema() -> None:
    """Naked expires_at, offset wall-clock, missing mandate id are the validator's (OSBP spec, Problems)."""
    doc = copy.deepcopy(SPEC_CREATE)
    del doc["mandate"]["id"]
    doc["mandate"]["expires_at"] = "2026-05-01T23:59:59"
    doc["mandate"]["latest_end"] = "2026-05-14T18:00:00Z"
    doc["time"] = "13:00+02:00"
    validator(tool_input_schema("booking.create")).validate(doc)


def test_result_schemas_accept_real_envelopes() -> None:
    """Result schemas describe the envelope the server emits (OSBP spec, Result Envelope)."""
    schema = validator(tool_result_schema("booking.create"))
    ok = SuccessEnvelope[Receipt](value=Receipt(id="r", booking_id="b", text="t"), audit_event_id="aud_1")
    schema.validate(ok.to_wire())
    fail = FailureEnvelope(
        problem=Problem(code="slot_taken", message="m", retryable=True), audit_event_id="a"
    )
    schema.validate(fail.to_wire())
    assert list(schema.iter_errors({"ok": True, "value": {"id": "r"}, "audit_event_id": "a"}))
    assert list(schema.iter_errors({**fail.to_wire(), "osbp_runtime": None}))


def test_tool_names_flatten_for_mcp_and_resolve_both_ways() -> None:
    """MCP tool names are the dotted names flattened with an osbp_ prefix (OSBP spec, Naming)."""
    assert [mcp_tool_name(n) for n in TOOLS] == [
        "osbp_service_describe",
        "osbp_availability_find",
        "osbp_policy_explain",
        "osbp_verification_send",
        "osbp_verification_verify",
        "osbp_booking_create",
        "osbp_booking_status",
        "osbp_handoff_request",
    ]
    assert tool_input_schema("osbp_booking_create") == tool_input_schema("booking.create")
    with pytest.raises(KeyError):
        tool_spec("booking.cancel")


def test_schema_files_are_plain_json_without_nulls() -> None:
    """No schema allows null anywhere (OSBP spec: absent optionals are omitted, never null)."""
    for path in SCHEMA_DIR.glob("*.json"):
        assert '"null"' not in path.read_text(encoding="utf-8"), path.name
        json.loads(path.read_text(encoding="utf-8"))
