"""`osbp audit verify`: an intact chain passes; an edited, deleted, inserted or swapped line is named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from osbp.protocol.canonical import sha256_hex
from osbp.protocol.models import ToolName
from osbp.server.audit import AuditDraft, AuditLog, Decision, record_hash
from osbp.server.audit_cli import main
from osbp.server.audit_verify import verify_chain

REPO = Path(__file__).resolve().parents[2]
KEY = "k" * 16 + "0123456789abcdef"  # 32 characters, the shortest accepted


def write_log(path: Path, key: bytes | None = None) -> Path:
    """Five availability.find events, keyed or not."""
    log = AuditLog(path, key=key)
    for n in range(1, 6):
        log.append(
            AuditDraft(
                id=f"aud_{n}",
                tool_name="availability.find",
                created_at=datetime(2026, 5, 1, 12, n, tzinfo=UTC),
                input={"date": "2026-05-05"},
                result={"ok": True, "value": [{"id": f"slot_{n}"}]},
                decision=Decision(ok=True),
            )
        )
    log.close()
    return path


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    """A clean five-event log."""
    return write_log(tmp_path / "events.jsonl")


def rewrite(path: Path, transform) -> None:
    raw = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(transform(raw)) + "\n", encoding="utf-8")


def test_a_clean_log_verifies_and_the_head_is_reported(log_path, capsys):
    """Platform choice: `osbp audit verify` passes on an untouched log."""
    assert main(["verify", str(log_path)]) == 0
    out = capsys.readouterr().out
    last = json.loads(log_path.read_text().splitlines()[-1])
    assert out == f"ok: 5 events, chain intact, head {last['hash']}\n"


def test_an_edited_line_is_named(log_path, capsys):
    """Platform choice: editing a recorded result breaks that line's own hash."""

    def edit(raw):
        record = json.loads(raw[2])
        record["result"]["value"][0]["id"] = "slot_forged"
        raw[2] = json.dumps(record, separators=(",", ":"))
        return raw

    rewrite(log_path, edit)
    assert main(["verify", str(log_path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("broken: line 3 (event aud_3): the line was edited")


def test_an_edit_that_recomputes_the_line_hash_still_breaks_the_next_link(log_path):
    """Platform choice: rewriting one line consistently still breaks the chain at the following line."""
    from osbp.protocol.canonical import sha256_hex
    from osbp.server.audit import record_hash

    def forge(raw):
        record = json.loads(raw[1])
        record["result"] = {"ok": False, "problem": {"code": "slot_taken", "message": "x", "retryable": True}}
        record["result_hash"] = sha256_hex(record["result"])
        record["hash"] = record_hash(record)
        raw[1] = json.dumps(record)
        return raw

    rewrite(log_path, forge)
    report = verify_chain(log_path)
    assert report.first_break is not None
    assert (report.first_break.line, report.first_break.event_id) == (3, "aud_3")
    assert "link to the previous line is broken" in report.first_break.reason


def test_a_deleted_line_is_named(log_path, capsys):
    """Platform choice: deleting a line breaks the link of the line after it."""
    rewrite(log_path, lambda raw: raw[:1] + raw[2:])
    assert main(["verify", str(log_path)]) == 1
    assert capsys.readouterr().out.startswith(
        "broken: line 2 (event aud_3): the link to the previous line is broken"
    )


def test_a_deleted_first_line_is_named(log_path):
    """Platform choice: the first line must start from the genesis hash."""
    rewrite(log_path, lambda raw: raw[1:])
    report = verify_chain(log_path)
    assert report.first_break is not None
    assert report.first_break.line == 1
    assert "lines before it were deleted" in report.first_break.reason


def test_swapped_lines_are_named(log_path, capsys):
    """Platform choice: reordering lines breaks the chain at the first moved line."""
    rewrite(log_path, lambda raw: [raw[0], raw[2], raw[1], raw[3], raw[4]])
    assert main(["verify", str(log_path)]) == 1
    assert capsys.readouterr().out.startswith("broken: line 2 (event aud_3)")


def test_an_inserted_line_is_named(log_path):
    """Platform choice: a line copied in from elsewhere breaks the chain where it sits."""
    rewrite(log_path, lambda raw: [*raw[:3], raw[0], *raw[3:]])
    report = verify_chain(log_path)
    assert report.first_break is not None
    assert (report.first_break.line, report.first_break.event_id) == (4, "aud_1")


def test_a_truncated_last_line_is_named(log_path):
    """Platform choice: a write cut off mid-line is reported, not silently ignored."""
    data = log_path.read_bytes()
    log_path.write_bytes(data[:-20])
    report = verify_chain(log_path)
    assert report.first_break is not None
    assert report.first_break.line == 5
    assert report.lines == 4


def test_an_empty_log_is_an_intact_chain_of_no_events(tmp_path, capsys):
    """Platform choice: a server that started and answered no call has an empty, intact log."""
    AuditLog(tmp_path / "events.jsonl").open()
    assert main(["verify", str(tmp_path / "events.jsonl")]) == 0
    assert capsys.readouterr().out == f"ok: 0 events, chain intact, head {'0' * 64}\n"


def verify(*args: str, cwd: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    """`osbp audit verify ARGS` in ``cwd`` with only ``variables`` set (no OSBP_* from the shell)."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("OSBP_")}
    return subprocess.run(
        [sys.executable, "-m", "osbp", "audit", "verify", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment | {"PYTHONPATH": str(REPO)} | variables,
        timeout=60,
    )


@pytest.mark.integration
def test_a_missing_log_is_not_an_intact_one(tmp_path):
    """Platform choice: a log that is not there vouches for nothing: one line, exit 2, nothing on stdout."""
    done = verify(str(tmp_path / "none.jsonl"), cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"osbp audit verify: no audit log at {tmp_path / 'none.jsonl'}: check the path (a server creates "
        "its log when it starts, at --audit-log-path / OSBP_AUDIT_LOG_PATH)\n"
    )


@pytest.mark.integration
def test_a_missing_default_log_is_named_by_its_default_path(tmp_path):
    """OSBP spec, Audit: without a path or OSBP_AUDIT_LOG_PATH the log is .osbp/audit/events.jsonl."""
    done = verify(cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("osbp audit verify: no audit log at .osbp/audit/events.jsonl: ")
    assert done.stderr.count("\n") == 1


@pytest.mark.integration
def test_a_missing_default_log_names_the_logs_found_under_dot_osbp(tmp_path):
    """Platform choice: after `make demo` (whose log is .osbp/demo/audit.jsonl), `osbp audit verify`
    alone says where the logs are instead of only that the default is missing."""
    demo_log = tmp_path / ".osbp" / "demo" / "audit.jsonl"
    demo_log.parent.mkdir(parents=True)
    demo_log.write_text("", encoding="utf-8")
    done = verify(cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.endswith("; audit logs under .osbp/: .osbp/demo/audit.jsonl\n")
    assert done.stderr.count("\n") == 1


@pytest.mark.integration
def test_an_empty_path_and_a_directory_are_one_line_each(tmp_path):
    """Platform choice: only a file can be verified; anything else says so on one line, exit 2."""
    empty = verify("", cwd=tmp_path)
    assert (empty.returncode, empty.stdout) == (2, "")
    assert empty.stderr == (
        "osbp audit verify: the log path is empty: give the audit log file, or leave it out to check "
        "$OSBP_AUDIT_LOG_PATH\n"
    )
    directory = verify(str(tmp_path), cwd=tmp_path)
    assert (directory.returncode, directory.stdout) == (2, "")
    assert (
        directory.stderr
        == f"osbp audit verify: {tmp_path} is a directory: give the audit log file inside it\n"
    )


def test_the_path_defaults_to_osbp_audit_log_path(log_path, monkeypatch, capsys):
    """OSBP spec, Audit: OSBP_AUDIT_LOG_PATH overrides the default log location."""
    monkeypatch.setenv("OSBP_AUDIT_LOG_PATH", str(log_path))
    assert main(["verify"]) == 0
    assert "5 events" in capsys.readouterr().out


def test_usage_errors_exit_2(capsys):
    """Platform choice: a wrong command line is a usage error, not a traceback."""
    assert main([]) == 2
    assert main(["rewrite"]) == 2


@pytest.mark.integration
def test_osbp_audit_verify_runs_from_the_command_line(log_path):
    """Platform choice: the operator's command is `osbp audit verify PATH`."""
    done = subprocess.run(
        [sys.executable, "-m", "osbp", "audit", "verify", str(log_path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok: 5 events")


def rehash(path: Path, edit) -> None:
    """Rewrite the whole log as someone without the key would: edit, then recompute every hash."""
    previous = "0" * 64
    out = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(raw)
        edit(record)
        record["input_hash"] = sha256_hex(record["input"])
        record["result_hash"] = sha256_hex(record["result"])
        record["prev_hash"] = previous
        record["hash"] = previous = record_hash(record)
        out.append(json.dumps(record, separators=(",", ":")))
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def test_a_keyed_log_verifies_with_its_key_and_says_so(tmp_path, monkeypatch, capsys):
    """Platform choice: OSBP_AUDIT_KEY adds a mac to every line; verify checks each with the key."""
    path = write_log(tmp_path / "events.jsonl", KEY.encode())
    assert all(isinstance(json.loads(line).get("mac"), str) for line in path.read_text().splitlines())
    monkeypatch.setenv("OSBP_AUDIT_KEY", KEY)
    assert main(["verify", str(path)]) == 0
    assert "5 events, chain intact, every mac checked with OSBP_AUDIT_KEY" in capsys.readouterr().out
    assert KEY not in path.read_text()


def test_a_log_rewritten_without_the_key_fails_its_macs(tmp_path, monkeypatch, capsys):
    """The point of the key: a rewriter can recompute SHA-256, but not the mac."""
    path = write_log(tmp_path / "events.jsonl", KEY.encode())

    def forge(record):
        record["result"]["value"][0]["id"] = "slot_forged"

    rehash(path, forge)
    assert verify_chain(path).ok  # the public chain alone cannot tell
    monkeypatch.setenv("OSBP_AUDIT_KEY", KEY)
    assert main(["verify", str(path)]) == 1
    assert capsys.readouterr().out.startswith("broken: line 1 (event aud_1): the line's mac does not match")


def test_the_wrong_key_and_a_missing_mac_are_named(tmp_path):
    keyed = write_log(tmp_path / "keyed.jsonl", KEY.encode())
    wrong = verify_chain(keyed, ("x" * 32).encode())
    assert wrong.first_break is not None
    assert (wrong.first_break.line, wrong.authenticated) == (1, True)
    assert "not written with this key" in wrong.first_break.reason
    unkeyed = write_log(tmp_path / "unkeyed.jsonl")
    missing = verify_chain(unkeyed, KEY.encode())
    assert missing.first_break is not None
    assert missing.first_break.reason == "the line has no mac, but the log is verified with a key"


def test_a_short_key_is_a_usage_error(log_path, monkeypatch, capsys):
    monkeypatch.setenv("OSBP_AUDIT_KEY", "too-short")
    assert main(["verify", str(log_path)]) == 2
    err = capsys.readouterr().err
    assert "at least 32 characters" in err
    assert "too-short" not in err


# --- Strict parsing --------------------------------------------------------------------------------


def prepend_member(path: Path, number: int, member: str) -> None:
    """Put ``member`` first in line ``number``'s object, before the key it duplicates (a hand forgery)."""

    def forge(raw):
        assert raw[number - 1].startswith("{")
        raw[number - 1] = "{" + member + "," + raw[number - 1][1:]
        return raw

    rewrite(path, forge)


@pytest.mark.parametrize(
    ("number", "member", "key"),
    [
        (3, '"result":{"ok":true,"value":[{"id":"slot_forged"}]}', "result"),
        (5, '"hash":"' + "0" * 64 + '"', "hash"),
        (2, '"prev_hash":"' + "f" * 64 + '"', "prev_hash"),
    ],
    ids=["a forged result", "a forged hash on the last line", "a forged link"],
)
def test_a_duplicated_key_is_refused_although_its_last_value_verifies(log_path, capsys, number, member, key):
    """OSBP spec, Audit (tamper-evident): a lenient parser keeps the last value, so a forged first one would
    pass while a first-wins reader shows it; the verifier refuses duplicated keys (RFC 8259 §4, I-JSON)."""
    head = json.loads(log_path.read_text().splitlines()[number - 2])["hash"]
    prepend_member(log_path, number, member)
    assert main(["verify", str(log_path)]) == 1
    assert capsys.readouterr().out == (
        f'broken: line {number}: the line is not strict JSON: the key "{key}" appears twice\n'
        f"the {number - 1} lines before it are intact (head {head})\n"
    )


@pytest.mark.parametrize(
    ("member", "reason"),
    [
        ('"note":NaN', "NaN is not a JSON number"),
        ('"note":-Infinity', "-Infinity is not a JSON number"),
        ('"note":1e999', "the number 1e999 does not fit a double"),
        ('"note":"\\ud800"', "a string holds a lone surrogate, which is not Unicode text"),
        ('"\\udfff":1', "a string holds a lone surrogate, which is not Unicode text"),
    ],
    ids=["NaN", "Infinity", "an overflowing number", "a lone surrogate", "a lone surrogate in a key"],
)
def test_text_that_is_not_i_json_is_named_on_its_line(log_path, capsys, member, reason):
    """RFC 7493 (I-JSON), which the writer's canonical hash needs: no constants, no infinities, no lone
    surrogates; such a line is one named break, never a traceback (platform choice)."""
    prepend_member(log_path, 2, member)
    assert main(["verify", str(log_path)]) == 1
    assert capsys.readouterr().out.splitlines()[0] == f"broken: line 2: the line is not strict JSON: {reason}"


def test_an_integer_beyond_i_json_is_named_on_its_line(log_path, capsys):
    """RFC 7493 §2.2: integers beyond 2**53 - 1 have no canonical form; a break, not a traceback."""
    prepend_member(log_path, 4, '"note":12345678901234567890')
    assert main(["verify", str(log_path)]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(
        "broken: line 4 (event aud_4): the line is not I-JSON, so it has no canonical hash"
    )


def test_a_line_that_is_not_utf8_is_named(log_path):
    """RFC 8259 §8.1: JSON text exchanged between systems is UTF-8; other bytes are a named break."""
    lines = log_path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b'"availability.find"', b'"availability.find\xff"')
    log_path.write_bytes(b"\n".join(lines))
    report = verify_chain(log_path)
    assert report.first_break is not None
    assert (report.first_break.line, report.first_break.reason) == (
        2,
        "the line is not strict JSON: it is not UTF-8 text",
    )


def test_a_forged_event_id_cannot_break_the_one_line_verdict(log_path, capsys):
    """Platform choice: the verdict names the event, escaped, so a newline in a forged id is no new line."""

    def forge(raw):
        record = json.loads(raw[1])
        record["id"] = "aud_2\nok: 5 events, chain intact"
        raw[1] = json.dumps(record, separators=(",", ":"))
        return raw

    rewrite(log_path, forge)
    assert main(["verify", str(log_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2
    assert out[0] == (
        'broken: line 2 (event "aud_2\\nok: 5 events, chain intact"): '
        "the line was edited: its content does not match its hash"
    )


def head_of(path: Path) -> str:
    head: str = json.loads(path.read_text().splitlines()[-1])["hash"]
    return head


def test_several_replicas_logs_are_each_verified_and_named(tmp_path, capsys):
    """Platform choice (docs/server.md, replicas): each replica keeps its own chain; verify takes them all
    and names each by its file, with its own head to anchor."""
    logs = [write_log(tmp_path / f"replica-{n}.jsonl") for n in (1, 2)]
    assert main(["verify", *map(str, logs)]) == 0
    assert capsys.readouterr().out == "".join(
        f"{log}: ok: 5 events, chain intact, head {head_of(log)}\n" for log in logs
    )


def test_a_broken_replica_log_is_named_among_intact_ones(tmp_path, capsys):
    """Platform choice: one replica's broken chain fails the run (status 1) and is named by its file; the
    other replicas' verdicts are still printed."""
    intact, broken = (write_log(tmp_path / f"replica-{n}.jsonl") for n in (1, 2))
    rewrite(broken, lambda raw: raw[:2] + raw[3:])
    assert main(["verify", str(broken), str(intact)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{broken}: broken: line 3 (event aud_4): ")
    assert out[1].startswith(f"{broken}: the 2 lines before it are intact (head ")
    assert out[2] == f"{intact}: ok: 5 events, chain intact, head {head_of(intact)}"


def test_a_missing_replica_log_fails_the_run_with_status_2(tmp_path, capsys):
    """Platform choice: a replica log that is not there is not an intact one; the worst status wins."""
    intact = write_log(tmp_path / "replica-1.jsonl")
    assert main(["verify", str(intact), str(tmp_path / "replica-2.jsonl")]) == 2
    captured = capsys.readouterr()
    assert captured.out.startswith(f"{intact}: ok: 5 events")
    assert captured.err.startswith(f"osbp audit verify: no audit log at {tmp_path / 'replica-2.jsonl'}: ")


def effect(event_id: str, tool: ToolName, **fields: Any) -> AuditDraft:
    """One record of an effect tool: an intent (``phase="intent"``) or a call's outcome."""
    draft = AuditDraft(
        id=event_id,
        tool_name=tool,
        created_at=datetime(2026, 5, 1, 12, 0, tzinfo=UTC),
        input={"idempotency_key": "k"} if tool == "booking.create" else {},
        result={},
        decision=Decision(ok=True),
        mandate_id="mnd_1",
    )
    return replace(draft, **fields)


def open_intents(path: Path, *drafts: AuditDraft) -> list[str]:
    """The ids of the intents `verify_chain` reports open after appending ``drafts``."""
    log = AuditLog(path)
    for draft in drafts:
        log.append(draft)
    log.close()
    report = verify_chain(path)
    assert report.ok
    return [intent.event_id for intent in report.open_intents]


REFUSED = Decision(ok=False, code="upstream_unavailable", retryable=True)


def test_an_intent_is_closed_by_the_outcome_that_lists_it(tmp_path):
    """docs/server.md, write-ahead: the call's record names the intents it wrote."""
    assert (
        open_intents(
            tmp_path / "events.jsonl",
            effect("aud_i", "verification.send", phase="intent"),
            effect("aud_o", "verification.send", intents=("aud_i",), result={"ok": True}),
        )
        == []
    )


def test_an_intent_left_by_a_crash_stays_open_until_the_same_create_settles(tmp_path):
    """docs/server.md, write-ahead: a retry of the same logical create (payload hash) settles its earlier
    intents; a refusal that never reached the platform, or another create, does not."""
    path = tmp_path / "events.jsonl"
    crashed = effect("aud_1", "booking.create", phase="intent", payload_hash="p")
    other = effect("aud_2", "booking.create", decision=Decision(ok=True), payload_hash="q")
    not_sent = effect("aud_3", "booking.create", decision=REFUSED, payload_hash="p")
    assert open_intents(path, crashed, other, not_sent) == ["aud_1"]
    resent = effect("aud_4", "booking.create", phase="intent", payload_hash="p")
    answered = effect("aud_5", "booking.create", decision=REFUSED, payload_hash="p", intents=("aud_4",))
    assert open_intents(path, resent, answered) == []


def test_open_intents_are_listed_after_the_verdict_and_the_status_stays_0(tmp_path, capsys):
    """docs/server.md, write-ahead: the chain is intact, the effect's outcome is what is missing."""
    path = tmp_path / "events.jsonl"
    open_intents(path, effect("aud_crashed", "verification.send", phase="intent"))
    assert main(["verify", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("ok: 1 events, chain intact, head ")
    assert out[1].startswith("1 intent without an outcome: the effect may have happened unrecorded")
    assert out[2:] == ["  aud_crashed verification.send mandate mnd_1 at 2026-05-01T12:00:00.000Z (line 1)"]
