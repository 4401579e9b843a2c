"""The audit log: redacted records, the hash chain, file modes and appends from several processes."""

from __future__ import annotations

import itertools
import json
import os
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from osbp.protocol.canonical import sha256_hex
from osbp.protocol.models import PlatformIdentity, UpstreamMeta
from osbp.server.audit import (
    GENESIS_HASH,
    SOURCE,
    AuditDraft,
    AuditLog,
    Decision,
    format_created_at,
    record_hash,
)
from osbp.server.audit_verify import verify_chain

AT = datetime(2026, 5, 5, 20, 0, 0, 123456, tzinfo=UTC)


def draft(n: int = 1, **overrides: Any) -> AuditDraft:
    """A booking.create draft carrying a customer and a challenge with a token."""
    values: dict[str, Any] = {
        "id": f"aud_{n:04d}",
        "tool_name": "booking.create",
        "created_at": AT,
        "input": {
            "mandate": {"id": "mnd_1", "organization_id": "org_1"},
            "idempotency_key": "idem_1",
            "customer": {"display_name": "Jane Customer", "phone": "+15555550100"},
        },
        "result": {
            "ok": False,
            "problem": {
                "code": "requires_user_confirmation",
                "message": 'The merchant will see: Jane Customer. approval.token="apv_secret123"',
                "retryable": True,
            },
        },
        "decision": Decision(ok=False, code="requires_user_confirmation", retryable=True),
        "mandate_id": "mnd_1",
        "mandate": {"id": "mnd_1", "organization_id": "org_1"},
        "platform": PlatformIdentity(vendor="bookwell", api_version="2026-04-01"),
        "upstream": UpstreamMeta(call="GET /api/organizations/org_1", status=200),
    }
    return AuditDraft(**(values | overrides))


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_record_carries_the_spec_fields_and_redacted_snapshots(tmp_path):
    """OSBP spec, Audit: id, mandate_id, tool_name, created_at, source, redacted input/result and hashes."""
    log = AuditLog(tmp_path / "audit" / "events.jsonl")
    log.append(draft())
    log.close()
    [record] = lines(log.path)
    assert record["id"] == "aud_0001"
    assert record["mandate_id"] == "mnd_1"
    assert record["tool_name"] == "booking.create"
    assert record["created_at"] == "2026-05-05T20:00:00.123Z"
    assert record["source"] == SOURCE == "osbp-local-mcp"
    assert record["platform"] == {"vendor": "bookwell", "api_version": "2026-04-01"}
    assert record["upstream"] == {"call": "GET /api/organizations/org_1", "status": 200}
    assert record["input"]["customer"] == {"display_name": "[redacted]", "phone": "[redacted]"}
    message = record["result"]["problem"]["message"]
    assert message == 'The merchant will see: [redacted]. approval.token="[redacted]"'
    assert record["input_hash"] == sha256_hex(record["input"])
    assert record["result_hash"] == sha256_hex(record["result"])
    assert record["decision"] == {"ok": False, "code": "requires_user_confirmation", "retryable": True}
    assert record["mandate"] == {"id": "mnd_1", "organization_id": "org_1"}


def test_upstream_and_mandate_id_are_absent_when_not_given(tmp_path):
    """OSBP spec, Audit: upstream is absent when the tool answered locally."""
    log = AuditLog(tmp_path / "events.jsonl")
    log.append(draft(upstream=None, mandate_id=None, mandate=None, platform=None))
    log.close()
    [record] = lines(log.path)
    assert "upstream" not in record
    assert "mandate_id" not in record
    assert "mandate" not in record
    assert "platform" not in record


def test_records_form_a_hash_chain_from_the_genesis_hash(tmp_path):
    """Platform choice: each record carries the previous record's hash and its own."""
    log = AuditLog(tmp_path / "events.jsonl")
    for n in range(1, 4):
        log.append(draft(n))
    log.close()
    records = lines(log.path)
    assert records[0]["prev_hash"] == GENESIS_HASH
    for previous, record in itertools.pairwise(records):
        assert record["prev_hash"] == previous["hash"]
    for record in records:
        assert record["hash"] == record_hash(record)
    assert verify_chain(log.path).ok


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=15,
)


@given(tool_input=st.dictionaries(st.text(max_size=6), _json_values, max_size=4), value=_json_values)
def test_the_record_hash_is_the_sha256_of_the_whole_records_canonical_json(tool_input, value):
    """OSBP spec, Audit (property): reusing the snapshots' canonical bytes still hashes the whole record
    exactly."""
    log = AuditLog(Path("unused.jsonl"))
    record = log.build(draft(input=tool_input, result={"ok": True, "value": value}), GENESIS_HASH).to_wire()
    assert record["hash"] == record_hash(record)
    assert record["input_hash"] == sha256_hex(record["input"])
    assert record["result_hash"] == sha256_hex(record["result"])


def test_a_log_reopened_later_continues_the_same_chain(tmp_path):
    """Platform choice: the chain continues across server restarts (the last hash is read from the file)."""
    path = tmp_path / "events.jsonl"
    first = AuditLog(path)
    first.append(draft(1))
    first.close()
    second = AuditLog(path)
    second.append(draft(2))
    second.close()
    records = lines(path)
    assert records[1]["prev_hash"] == records[0]["hash"]
    assert verify_chain(path).lines == 2


def test_the_log_file_is_0600_and_a_directory_it_creates_is_0700(tmp_path):
    """Platform choice: the audit trail is private to the operator."""
    path = tmp_path / "fresh" / "audit" / "events.jsonl"
    log = AuditLog(path)
    log.append(draft())
    log.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_a_directory_another_process_creates_first_is_no_error(tmp_path, monkeypatch):
    """Two servers starting on one new audit path: the one that loses the race to mkdir still opens."""
    path = tmp_path / "race" / "events.jsonl"
    path.parent.mkdir(mode=0o700)
    real_exists = Path.exists
    # The other process created the directory just after this one looked.
    monkeypatch.setattr(Path, "exists", lambda self: False if self == path.parent else real_exists(self))
    log = AuditLog(path)
    log.append(draft())
    log.close()
    assert len(lines(path)) == 1
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_an_existing_world_readable_log_is_made_private(tmp_path):
    """Platform choice: a log created by someone else's umask is tightened to 0600 on open."""
    path = tmp_path / "events.jsonl"
    path.touch(mode=0o644)
    os.chmod(path, 0o644)
    log = AuditLog(path)
    log.open()
    log.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_created_at_is_an_rfc3339_utc_instant_with_milliseconds():
    """OSBP spec, Time Discipline: audit created_at is an RFC 3339 instant."""
    assert format_created_at(datetime(2026, 5, 5, 13, 0, tzinfo=UTC)) == "2026-05-05T13:00:00.000Z"
    with pytest.raises(ValueError, match="timezone-aware"):
        format_created_at(datetime(2026, 5, 5, 13, 0))  # the naive instant is the point


_WRITER = """
import sys
from datetime import UTC, datetime
from osbp.server.audit import AuditDraft, AuditLog, Decision
log = AuditLog(sys.argv[1])
for n in range(int(sys.argv[3])):
    log.append(AuditDraft(id=f"aud_{sys.argv[2]}_{n}", tool_name="service.describe",
        created_at=datetime.now(UTC), input={}, result={"ok": True, "value": {"id": "svc"}},
        decision=Decision(ok=True)))
log.close()
"""


@pytest.mark.integration
def test_several_processes_appending_keep_one_valid_chain(tmp_path):
    """Platform choice: concurrent server processes share one log and one valid chain."""
    path = tmp_path / "events.jsonl"
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), str(w), "40"]) for w in range(4)]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0, 0, 0]
    report = verify_chain(path)
    assert report.ok, report.first_break
    assert report.lines == 160
    assert len({record["id"] for record in lines(path)}) == 160


def test_an_append_links_to_another_writers_line_written_since_its_own(tmp_path):
    """Platform choice: a log remembers where its own last line ended only as a shortcut; once another
    writer has appended after it, the next record links to that writer's line, not to its own."""
    path = tmp_path / "events.jsonl"
    first, second = AuditLog(path), AuditLog(path)
    first.append(draft(1))
    first.append(draft(2))  # follows its own line
    second.append(draft(3))
    first.append(draft(4))  # the file no longer ends where its own last line did
    second.append(draft(5))
    first.close()
    second.close()
    records = lines(path)
    assert [record["id"] for record in records] == [f"aud_000{n}" for n in range(1, 6)]
    assert [record["prev_hash"] for record in records[1:]] == [record["hash"] for record in records[:-1]]
    report = verify_chain(path)
    assert (report.ok, report.lines) == (True, 5)


# --- Durability: effects fsynced before the answer, reads in groups -------------------------------------


class FsyncCounter:
    """Counts the real fsyncs the audit log makes (the call still reaches the operating system)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import threading

        self.calls = 0
        self.synced = threading.Event()
        real = os.fsync

        def counted(fd: int) -> None:
            real(fd)
            self.calls += 1
            self.synced.set()

        monkeypatch.setattr("osbp.server.audit.os.fsync", counted)


def test_a_durable_append_is_fsynced_before_it_returns(tmp_path, monkeypatch):
    """Platform choice (docs/server.md, group commit): a record of a call with an effect is on disk
    before the call's answer leaves, every time."""
    fsyncs = FsyncCounter(monkeypatch)
    log = AuditLog(tmp_path / "events.jsonl", sync_delay_s=3600)
    for n in range(3):
        log.append(draft(n), durable=True)
        assert fsyncs.calls == n + 1
    log.close()


def test_non_durable_appends_are_written_at_once_and_synced_in_a_group(tmp_path, monkeypatch):
    """Platform choice (docs/server.md, group commit): a read's record is in the file when append returns
    (another reader sees it), its fsync waits for the group: the count bound, or the next durable append,
    which syncs every line before it too."""
    fsyncs = FsyncCounter(monkeypatch)
    path = tmp_path / "events.jsonl"
    log = AuditLog(path, sync_every=3, sync_delay_s=3600)
    log.append(draft(1), durable=False)
    log.append(draft(2), durable=False)
    assert [record["id"] for record in lines(path)] == ["aud_0001", "aud_0002"]
    assert fsyncs.calls == 0
    log.append(draft(3), durable=False)
    assert fsyncs.calls == 1  # the third line filled the group
    log.append(draft(4), durable=False)
    log.append(draft(5), durable=True)
    assert fsyncs.calls == 2  # one fsync for the pending read and the effect
    log.append(draft(6), durable=False)
    log.close()
    assert fsyncs.calls == 3  # closing syncs what is pending
    assert verify_chain(path).lines == 6


def test_a_pending_group_is_synced_within_the_delay(tmp_path, monkeypatch):
    """Platform choice (docs/server.md, group commit): an unsynced read record waits at most the bounded
    delay for its fsync, with no further append needed."""
    fsyncs = FsyncCounter(monkeypatch)
    log = AuditLog(tmp_path / "events.jsonl", sync_every=1000, sync_delay_s=0.01)
    log.append(draft(1), durable=False)
    assert fsyncs.synced.wait(10)
    assert fsyncs.calls == 1
    log.close()
    assert fsyncs.calls == 1  # nothing was pending any more


def test_a_torn_last_line_stays_apart_and_the_chain_continues_from_its_bytes(tmp_path):
    """Platform choice: a line cut off by a crash (an operating-system crash before the group's fsync)
    is ended before the next record, so verify names exactly that line and the next record is whole."""
    path = tmp_path / "events.jsonl"
    log = AuditLog(path)
    log.append(draft(1))
    log.append(draft(2))
    log.close()
    data = path.read_bytes()
    torn = data[: len(data) - 40]  # the second line loses its end, newline included
    path.write_bytes(torn)
    torn_report = verify_chain(path).first_break
    assert torn_report is not None
    assert torn_report.reason == "the last line is incomplete"
    after = AuditLog(path)
    after.append(draft(3))
    after.close()
    report = verify_chain(path)
    assert report.first_break is not None
    assert (report.lines, report.first_break.line) == (1, 2)
    *_, torn_line, last = path.read_bytes().split(b"\n")[:-1]
    record = json.loads(last)
    assert record["id"] == "aud_0003"
    assert record["prev_hash"] == sha256_hex(torn_line.decode("utf-8"))
    assert record["hash"] == record_hash(record)


_READ_STREAM = """
import sys
from datetime import UTC, datetime
from osbp.server.audit import AuditDraft, AuditLog, Decision
log = AuditLog(sys.argv[1], sync_every=10**9, sync_delay_s=3600)
n = 0
while True:
    log.append(AuditDraft(id=f"aud_{n}", tool_name="service.describe", created_at=datetime.now(UTC),
        input={"service_id": "svc"}, result={"ok": True, "value": {"id": "svc", "name": "x" * 500}},
        decision=Decision(ok=True)), durable=False)
    n += 1
    print(n, flush=True)
"""


@pytest.mark.integration
def test_a_server_killed_mid_stream_of_unsynced_reads_leaves_an_intact_chain(tmp_path):
    """Platform choice (docs/server.md, group commit): a process killed while appending read records it
    has not fsynced loses none of them and leaves a chain that verifies and continues."""
    path = tmp_path / "events.jsonl"
    writer = subprocess.Popen(
        [sys.executable, "-c", _READ_STREAM, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    reported = 0
    try:
        while reported < 200:
            reported = int(writer.stdout.readline())
    finally:
        writer.kill()  # SIGKILL: no close, no fsync, mid-stream
        writer.wait(timeout=30)
        writer.stdout.close()
    report = verify_chain(path)
    assert report.ok, report.first_break
    assert report.lines >= reported
    log = AuditLog(path)
    log.append(draft(1))
    log.close()
    after = verify_chain(path)
    assert after.ok, after.first_break
    assert after.lines == report.lines + 1
