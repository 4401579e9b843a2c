"""The audit checks: a log in the documented format passes, and each defect fails exactly its check."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import rfc8785

from osbp.conformance.audit_checks import CHECK_IDS, AuditLogFile, grade_audit, sentinels, spec_tool_name
from osbp.conformance.envelope_checks import SCHEMA_INVALID_CALL
from osbp.conformance.grading import Grader, Verdict
from osbp.conformance.wire import Exchange
from osbp.server.audit import AuditDraft, AuditLog, Decision
from osbp.server.redaction import ALLOWED_KEYS, Redactor
from tests.conformance.fake_session import result

TOKEN = "tok_9f3Kq2LmZx81"  # a made-up approval token
CUSTOMER = {"display_name": "Casey Conformance", "phone": "+15555550142", "email": "casey@example.com"}
CREATE_INPUT = {
    "idempotency_key": "key_1",
    "service_id": "conformance_fixed_usd",
    "customer": CUSTOMER,
    "approval": {"confirmed": True, "token": TOKEN},
}
RECEIPT = {"ok": True, "value": {"id": "receipt_1", "booking_id": "appt_1", "text": "Booked for Casey."}}
DESCRIBED = {"ok": True, "value": {"id": "conformance_verification", "name": "SMS (sandbox code 123456)"}}


def _sha(value: Any) -> str:
    return hashlib.sha256(rfc8785.dumps(value)).hexdigest()


def _redacted(record: dict[str, Any]) -> dict[str, Any]:
    """What a redacting server writes for the records below (the battery never sees the server's code)."""
    text = json.dumps(record)
    for secret in (TOKEN, *CUSTOMER.values()):
        text = text.replace(secret, "[redacted]")
    return dict(json.loads(text.replace("Casey", "[redacted]")))


def _records() -> list[dict[str, Any]]:
    return [
        {"id": "aud_1", "tool_name": "service.describe", "input": {"service_id": "x"}, "result": DESCRIBED},
        {"id": "aud_2", "tool_name": "booking.create", "input": CREATE_INPUT, "result": RECEIPT},
    ]


def _write(path: Path, records: list[dict[str, Any]], *, redact: bool = True, rehash: bool = True) -> None:
    """Chain `records` into `path` as the documented format says (hashes over what is written)."""
    previous, lines = "0" * 64, []
    for plain in records:
        record = _redacted(plain) if redact else dict(plain)
        record.setdefault("input_hash", _sha(record["input"]))
        record.setdefault("result_hash", _sha(record["result"]))
        record["prev_hash"] = previous
        record["hash"] = _sha(record) if rehash else record.get("hash", "0" * 64)
        previous = record["hash"]
        lines.append(json.dumps(record))
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def _append_records(log: AuditLog) -> None:
    """Write `_records()` through this project's own audit writer, then close it."""
    for record in _records():
        log.append(
            AuditDraft(
                id=record["id"],
                tool_name=record["tool_name"],
                created_at=datetime(2030, 5, 1, 12, tzinfo=UTC),
                input=record["input"],
                result=record["result"],
                decision=Decision(ok=True),
            )
        )
    log.close()


def _exchanges() -> list[Exchange]:
    described = Exchange(
        "osbp_service_describe", {"service_id": "x"}, result({**DESCRIBED, "audit_event_id": "aud_1"})
    )
    created = Exchange("osbp_booking_create", CREATE_INPUT, result({**RECEIPT, "audit_event_id": "aud_2"}))
    invalid = Exchange(*SCHEMA_INVALID_CALL, result({"ok": False, "problem": {"code": "invalid_input"}}))
    return [described, created, invalid]


def _failed(log: Path | None, exchanges: list[Exchange] | None = None) -> dict[str, str]:
    grader = Grader()
    file = None if log is None else AuditLogFile(log)
    grade_audit(grader, file, _exchanges() if exchanges is None else exchanges)
    rows = grader.results(missing=Verdict.PASS, missing_detail="")
    assert {row.check.id for row in rows if row.check.id.startswith("audit.")} == set(CHECK_IDS)
    return {row.check.id: row.detail for row in rows if row.verdict is Verdict.FAIL}


def test_a_log_in_the_documented_format_passes_every_audit_check(tmp_path):
    """OSBP spec, Audit: one redacted record per schema-valid call, hashes over the redacted snapshots."""
    _write(tmp_path / "log.jsonl", _records())
    assert _failed(tmp_path / "log.jsonl") == {}


def test_the_log_this_projects_server_writes_passes_every_audit_check(tmp_path):
    """docs/server.md (the audit log): the battery's own reading of the format agrees with the writer."""
    log = AuditLog(tmp_path / "log.jsonl")
    _append_records(log)
    assert _failed(tmp_path / "log.jsonl") == {}


def test_an_approval_token_in_clear_fails_only_the_redaction_check(tmp_path):
    """OSBP spec, Audit: approval tokens are redacted before writing."""
    log = AuditLog(tmp_path / "log.jsonl", redactor=Redactor(allowed_keys=ALLOWED_KEYS | {"token"}))
    _append_records(log)
    failed = _failed(tmp_path / "log.jsonl")
    assert set(failed) == {"audit.redacted"}
    assert "an approval token" in failed["audit.redacted"]
    assert TOKEN not in failed["audit.redacted"]  # the report never repeats the secret


def test_a_customer_contact_in_clear_fails_the_redaction_check(tmp_path):
    """OSBP spec, Audit: structured customer contact and name fields are redacted."""
    records = _records()
    _write(tmp_path / "log.jsonl", records[:1], redact=False)
    with (tmp_path / "log.jsonl").open("a", encoding="utf-8") as handle:
        leaked = {**_redacted(records[1]), "note": "call +15555550142"}
        leaked |= {"input_hash": _sha(leaked["input"]), "result_hash": _sha(leaked["result"])}
        leaked["prev_hash"] = json.loads((tmp_path / "log.jsonl").read_text().splitlines()[0])["hash"]
        leaked["hash"] = _sha(leaked)
        handle.write(json.dumps(leaked) + "\n")
    assert set(_failed(tmp_path / "log.jsonl")) == {"audit.redacted"}


def test_a_name_part_the_catalog_carries_is_merchant_data_but_the_whole_name_is_still_a_leak(tmp_path):
    """Platform choice (docs/conformance.md, the audit log): a family name that is also a word of the
    merchant's catalog ("Conformance" of "Conformance Co") may appear where the catalog does; the customer's
    whole name may not."""
    catalog = {"ok": True, "value": {"id": "x", "name": "Conformance Co cleaning"}}
    customer = {**CUSTOMER, "given_name": "Casey", "family_name": "Conformance"}
    create = {**CREATE_INPUT, "customer": customer}
    described = Exchange(
        "osbp_service_describe", {"service_id": "x"}, result({**catalog, "audit_event_id": "aud_1"})
    )
    created = Exchange("osbp_booking_create", create, result({**RECEIPT, "audit_event_id": "aud_2"}))
    invalid = Exchange(*SCHEMA_INVALID_CALL, result({"ok": False, "problem": {"code": "invalid_input"}}))
    records = [
        {"id": "aud_1", "tool_name": "service.describe", "input": {"service_id": "x"}, "result": catalog},
        {"id": "aud_2", "tool_name": "booking.create", "input": create, "result": RECEIPT},
    ]
    _write(tmp_path / "log.jsonl", records)
    assert _failed(tmp_path / "log.jsonl", [described, created, invalid]) == {}
    found = sentinels([described, created, invalid])
    assert "Conformance" not in found
    assert {"Casey Conformance", "Casey", "+15555550142", "15555550142", TOKEN} <= found


def test_a_name_part_the_battery_uses_in_its_own_keys_is_no_sentinel_either():
    """Platform choice (docs/conformance.md, the audit log): the battery's idempotency keys and mandate ids
    ("conformance_<nonce>_001") are its own identifiers, which the log records; a family name that is also
    their prefix is no leak there, while the whole name and the contacts stay sentinels."""
    customer = {**CUSTOMER, "given_name": "Casey", "family_name": "Conformance"}
    create = {**CREATE_INPUT, "idempotency_key": "conformance_1a2b_001", "customer": customer}
    created = Exchange("osbp_booking_create", create, result({**RECEIPT, "audit_event_id": "aud_2"}))
    found = sentinels([created])
    assert "Conformance" not in found
    assert {"Casey Conformance", "Casey", "+15555550142", "casey@example.com", TOKEN} <= found
    plain = Exchange("osbp_booking_create", {**create, "idempotency_key": "key_1"}, created.result)
    assert "Conformance" in sentinels([plain])


def test_a_sandbox_code_in_platform_data_is_no_leak_but_in_the_call_that_carried_it_is(tmp_path):
    """OSBP spec, Audit: verification codes are redacted from the events of the calls that carry them; the
    same digits in a service name the platform publishes are platform data."""
    verify = {"customer": {"phone": CUSTOMER["phone"]}, "purpose": "booking:co", "code": "123456"}
    problem = {"code": "pre_verification_not_supported", "message": "No."}
    answer: dict[str, Any] = {"ok": False, "problem": problem}
    records = [
        *_records(),
        {
            "id": "aud_3",
            "tool_name": "verification.verify",
            "input": verify | {"code": "[redacted]"},
            "result": answer,
        },
    ]
    exchanges = [
        *_exchanges(),
        Exchange("osbp_verification_verify", verify, result({**answer, "audit_event_id": "aud_3"})),
    ]
    _write(tmp_path / "log.jsonl", records)
    assert _failed(tmp_path / "log.jsonl", exchanges) == {}  # "123456" stays in aud_1's service name
    records[2] = {**records[2], "result": {**answer, "problem": {**problem, "message": "123456"}}}
    _write(tmp_path / "log.jsonl", records)
    assert set(_failed(tmp_path / "log.jsonl", exchanges)) == {"audit.redacted"}


def test_an_edited_line_fails_only_the_chain(tmp_path):
    """Platform choice (docs/conformance.md, the chain): a line's hash covers the whole record."""
    _write(tmp_path / "log.jsonl", _records())
    lines = (tmp_path / "log.jsonl").read_text().splitlines()
    first = json.loads(lines[0]) | {"tool_name": "service.describe", "source": "edited"}
    (tmp_path / "log.jsonl").write_text("\n".join([json.dumps(first), lines[1]]) + "\n")
    failed = _failed(tmp_path / "log.jsonl")
    assert set(failed) == {"audit.chain"}
    assert "line 1" in failed["audit.chain"]


def test_a_deleted_line_fails_the_chain(tmp_path):
    """Platform choice (docs/conformance.md, the chain): each line links to the previous one's hash."""
    _write(tmp_path / "log.jsonl", _records())
    lines = (tmp_path / "log.jsonl").read_text().splitlines()
    (tmp_path / "log.jsonl").write_text(lines[1] + "\n")
    failed = _failed(tmp_path / "log.jsonl")
    assert "audit.chain" in failed
    assert "prev_hash" in failed["audit.chain"]


def test_hashes_over_the_unredacted_input_fail_only_the_hash_check(tmp_path):
    """OSBP spec, Audit: input_hash and result_hash are digests of the redacted snapshots."""
    records = _records()
    records[1] = records[1] | {"input_hash": _sha(CREATE_INPUT)}  # chained over, so the chain verifies
    _write(tmp_path / "log.jsonl", records)
    failed = _failed(tmp_path / "log.jsonl")
    assert set(failed) == {"audit.hashes"}
    assert "line 2: input_hash" in failed["audit.hashes"]


def test_a_call_without_its_record_fails_only_record_per_call(tmp_path):
    """OSBP spec, Audit: every schema-valid call produces an audit event (its id is the envelope's)."""
    _write(tmp_path / "log.jsonl", _records()[1:])
    failed = _failed(tmp_path / "log.jsonl")
    assert set(failed) == {"audit.record_per_call"}
    assert "#1 osbp_service_describe: 0 records with id aud_1" in failed["audit.record_per_call"]


def test_a_record_for_no_call_of_the_run_fails_record_per_call(tmp_path):
    """OSBP spec, Audit: one event per call: a second record of a call is not the call's one record."""
    records = _records()
    _write(tmp_path / "log.jsonl", [*records, records[0] | {"id": "aud_9"}])
    assert set(_failed(tmp_path / "log.jsonl")) == {"audit.record_per_call"}


def test_records_before_the_run_and_write_ahead_intents_are_not_call_records(tmp_path):
    """Platform choice (docs/conformance.md): the run's records are the lines appended after it started,
    and a `"phase": "intent"` line is a write-ahead record, not a call's record."""
    records = _records()
    older = records[0] | {"id": "aud_0"}
    intent = records[1] | {"id": "aud_i", "phase": "intent", "result": {}}
    _write(tmp_path / "log.jsonl", [older])
    start = (tmp_path / "log.jsonl").stat().st_size
    _write(tmp_path / "log.jsonl", [older, records[0], intent, records[1]])
    grader = Grader()
    grade_audit(grader, AuditLogFile(tmp_path / "log.jsonl", start), _exchanges())
    assert [grader.verdict(check_id) for check_id in CHECK_IDS] == [Verdict.PASS] * 4


def test_without_a_log_the_audit_checks_are_skipped_and_a_missing_log_fails_them(tmp_path):
    """Platform choice (docs/conformance.md): no --audit-log is SKIP, never PASS; a log that is not there is
    not an intact one."""
    grader = Grader()
    grade_audit(grader, None, _exchanges())
    assert [grader.verdict(check_id) for check_id in CHECK_IDS] == [Verdict.SKIP] * 4
    assert set(_failed(tmp_path / "missing.jsonl")) == set(CHECK_IDS)


def test_a_log_measured_before_the_server_created_it_starts_at_zero(tmp_path):
    """Platform choice: a log the server creates when it starts holds only the run's records."""
    assert AuditLogFile.before_run(tmp_path / "later.jsonl").start == 0


def test_the_spec_tool_name_of_each_mcp_name():
    """OSBP spec, Naming: the flattened MCP names and the dotted tool names of audit events."""
    assert spec_tool_name("osbp_booking_create") == "booking.create"
    assert spec_tool_name("osbp_verification_verify") == "verification.verify"
    assert spec_tool_name("osbp_service_describe") == "service.describe"
