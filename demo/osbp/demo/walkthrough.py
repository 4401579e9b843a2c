"""The `make demo` story: four verticals booked through the real stack, then the guardrail refusing.

:func:`run_demo` starts the platform (fresh temporary database, test surface on, optionally a frozen
clock) and, at the same time, one OSBP MCP server subprocess for the four merchants (each confirmed its own
way, `--confirmation-for`), then plays the
agent through the MCP SDK client: the user's request → the BookingMandate → service.describe →
availability.find → policy.explain read back → booking.create preflight → the approval summary the user
sees → "the user approves" → approved retry → verification when required → booking.status → receipt →
audit event ids. The coda books over the mandate's price cap and proves the platform saw no write. Every
expected outcome is checked; :class:`DemoResult` carries the failures (the exit status) and a JSON
transcript.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from osbp.demo.client import HostDialog, OsbpClient, ServerConfig, ToolCall
from osbp.demo.narration import (
    Narrator,
    money_text,
    policy_sentence,
    pretty_json,
    service_sentence,
    slot_sentence,
)
from osbp.demo.playbook import approval_token, book, create_arguments, find_open_day, pick_slot
from osbp.demo.recorder import AuditTail, RecordingAgent, Step
from osbp.demo.scenarios import VERTICALS, Vertical, build_mandate, local_today
from osbp.demo.stack import PlatformControl, SpawnedPlatform, StartingPlatform, starting_platform
from osbp.demo.turns import ServerJob, Work, run_in_turns
from osbp.protocol.models import BookingMandate
from osbp.server.redaction import Redactor

__all__ = ["DemoResult", "operator_warnings", "run_demo"]

#: Keys every server log line carries around its event's own fields (osbp.server.logs).
_LOG_LINE_KEYS = frozenset({"ts", "level", "logger", "event"})


@dataclass
class DemoResult:
    """What the run proved: the failed expectations (none on success) and the JSON transcript."""

    failures: list[str] = field(default_factory=list)
    transcript: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every expected outcome happened."""
        return not self.failures


@dataclass
class _Run:
    """Shared state of one demo run."""

    narrator: Narrator
    control: PlatformControl
    base_url: str
    #: The instant both clocks are frozen at (``--now``), or ``None`` when both run on the real clock.
    frozen_now: datetime | None
    workdir: Path
    audit_log: Path
    result: DemoResult
    errlogs: list[Path] = field(default_factory=list)
    #: The platform's clock when it started serving (read before the first turn).
    started_at: datetime | None = None

    @property
    def platform_now(self) -> datetime:
        """The platform's clock at its start (the servers start before it is known)."""
        if self.started_at is None:
            raise RuntimeError("the platform's clock is read once the platform serves")
        return self.started_at

    def expect(self, passed: bool, text: str) -> bool:
        """Narrate an expected outcome and remember it when it did not happen."""
        self.narrator.check(passed, text)
        if not passed:
            self.result.failures.append(text)
        return passed

    def config(self, verticals: Sequence[Vertical]) -> ServerConfig:
        """The one MCP server for every vertical's organization (one state file, the shared audit log).

        Bookings are confirmed by token unless the merchant's are confirmed only through the host
        (``--confirmation token --confirmation-for ORG=elicitation,...``).
        """
        hosted = [
            vertical.organization_id for vertical in verticals if vertical.confirmation == "elicitation"
        ]
        return ServerConfig(
            platform_base_url=self.base_url,
            organization_id=",".join(vertical.organization_id for vertical in verticals),
            state_path=self.workdir / "state.sqlite3",
            audit_log_path=self.audit_log,
            now=self.frozen_now,
            confirmation="token",
            confirmation_for=",".join(f"{org}=elicitation" for org in hosted) or None,
        )

    def errlog(self, name: str) -> Path:
        """A fresh file for one server process's stderr (the operator channel)."""
        path = self.workdir / f"{name}-stderr.log"
        self.errlogs.append(path)
        return path


def _confirmation_note(verticals: Sequence[Vertical]) -> str:
    """Which way each merchant's bookings are confirmed (one MCP server serves them all)."""
    by_token = [vertical.organization_name for vertical in verticals if vertical.confirmation == "token"]
    by_host = [vertical.organization_name for vertical in verticals if vertical.confirmation != "token"]
    parts = [f"by approval token for {', '.join(by_token)}"] if by_token else []
    if by_host:
        parts.append(f"only in the host's dialog (MCP elicitation) for {', '.join(by_host)}")
    return "one OSBP MCP server for every merchant; bookings confirmed " + "; ".join(parts)


def _step_of(agent: RecordingAgent, call: ToolCall) -> Step:
    return next(step for step in reversed(agent.steps) if step.result is call.envelope)


def _write_note(step: Step) -> str:
    requests = step.platform_create_requests
    wrote = "the platform stored it" if step.platform_write else "no platform write"
    return f"{wrote}; appointment-create requests sent to the platform: {requests}"


def _outcome(call: ToolCall) -> str:
    return "ok" if call.ok else f"{call.problem_code} (retryable: {call.problem.get('retryable', False)})"


def _redacted_steps(steps: Sequence[Step]) -> list[dict[str, Any]]:
    redactor = Redactor()
    known = redactor.discover(*(part for step in steps for part in (step.input, step.result)))
    return [
        {
            "tool": step.tool,
            "phase": step.phase,
            "input": redactor.redact(step.input, known),
            "result": redactor.redact(step.result, known),
            "platform_write": step.platform_write,
            "platform_create_requests": step.platform_create_requests,
        }
        for step in steps
    ]


async def _confirmed_by_token(
    run: _Run, vertical: Vertical, agent: RecordingAgent, arguments: dict[str, Any], record: dict[str, Any]
) -> dict[str, Any] | None:
    """The spec's path: preflight, the summary the agent shows, the approved retry with the token."""
    say, expect = run.narrator.say, run.expect
    outcome = await book(agent, arguments)
    preflight = _step_of(agent, outcome.preflight)
    say(
        "Agent",
        f"booking.create (preflight, no approval) → {_outcome(outcome.preflight)}; {_write_note(preflight)}.",
    )
    gated = outcome.summary is not None
    expect(gated and not preflight.platform_write, "the approval gate answered before any platform write")
    if outcome.summary is None:
        record["problem"] = outcome.preflight.problem
        return None
    token = approval_token(outcome.preflight.problem["message"]) or ""
    run.narrator.block("Approval summary, exactly as the user sees it", outcome.summary)
    expect(
        token not in outcome.summary and "approval.token" not in outcome.summary, "no token reaches the user"
    )
    record["approval_summary"] = outcome.summary
    say("User", "Yes, book it.")

    assert outcome.approved is not None  # a challenge with a token always leads to the approved retry
    approved = _step_of(agent, outcome.approved)
    say("Agent", f"booking.create (approved retry) → {_outcome(outcome.approved)}; {_write_note(approved)}.")
    if outcome.verification_send is not None:
        asked = outcome.approved.problem_code == "requires_verification"
        expect(asked, "the platform asked to verify the customer")
        sent = outcome.verification_send
        say(
            "Agent",
            f"verification.send → {'sent by ' + str(sent.value['method']) if sent.ok else _outcome(sent)}.",
        )
        say("User", "(reads the 6-digit code on their phone and gives it to the agent)")
        final = _step_of(agent, outcome.final)
        say(
            "Agent",
            f"booking.create (retry with the code) → {_outcome(outcome.final)}; {_write_note(final)}.",
        )
    receipt = outcome.receipt
    if not expect(receipt is not None, f"{vertical.organization_name}: booked, receipt issued"):
        record["problem"] = outcome.final.problem
        return None
    assert receipt is not None
    record["receipt"] = receipt
    return receipt


async def _confirmed_by_host(
    run: _Run,
    vertical: Vertical,
    agent: RecordingAgent,
    client: OsbpClient,
    arguments: dict[str, Any],
    record: dict[str, Any],
) -> dict[str, Any] | None:
    """The host's path: one booking.create; the server asks the user in the host's dialog (elicitation)."""
    say, expect = run.narrator.say, run.expect
    host = client.host
    assert host is not None  # the client declares elicitation whenever a merchant confirms in the host
    seen = len(host.shown)
    booked = await agent.call(
        "booking.create", arguments, phase="host_confirmation", note="the user confirms in the host's dialog"
    )
    step = _step_of(agent, booked)
    shown = host.shown[seen:]
    if expect(len(shown) == 1, "the server asked the user through the host (MCP elicitation)"):
        run.narrator.block("The host's dialog, exactly as the user sees it (the agent never does)", shown[0])
        record["approval_summary"] = shown[0].split("\n\n", 1)[-1]
    say("User", "(presses Confirm in the host's dialog)")
    say("Agent", f"booking.create → {_outcome(booked)}; {_write_note(step)}.")
    expect("approval" not in arguments, "the agent sent no approval token: it never held one")
    receipt = booked.value if booked.ok else None
    if not expect(receipt is not None, f"{vertical.organization_name}: booked, receipt issued"):
        record["problem"] = booked.problem
        return None
    record["receipt"] = receipt
    return receipt


async def _vertical(run: _Run, vertical: Vertical, client: OsbpClient) -> BookingMandate:
    """One vertical's happy path; returns the mandate the user granted (the coda reuses it)."""
    say, expect = run.narrator.say, run.expect
    agent = RecordingAgent(client, run.control, vertical.organization_id, AuditTail(run.audit_log))
    record: dict[str, Any] = {"vertical": vertical.key, "organization_id": vertical.organization_id}
    run.result.transcript["verticals"].append(record)
    run.narrator.section(f"{vertical.title} — {vertical.organization_name}")
    say("User", vertical.user_request)
    record["user_request"] = vertical.user_request
    mandate = build_mandate(vertical, run.platform_now)
    record["mandate"] = mandate.to_wire()
    run.narrator.block("The BookingMandate the agent builds", pretty_json(mandate.to_wire()))

    describe = await agent.call("service.describe", {"service_id": vertical.service_id}, phase="lookup")
    if not expect(describe.ok, "service.describe answered"):
        return mandate
    say("Agent", f"service.describe → {service_sentence(describe.value)}")

    today = local_today(run.platform_now, vertical.region.timezone)
    choice = await find_open_day(
        agent,
        service_id=vertical.service_id,
        schedule_id=vertical.schedule_id,
        after=today,
        earliest_time=vertical.preferred_time,
    )
    if not expect(choice is not None, "availability.find found an open day"):
        return mandate
    assert choice is not None  # narrowed by the expectation above
    slot = pick_slot(choice.slots, vertical.preferred_time)
    record["slot"] = {key: slot[key] for key in sorted(slot) if key != "provider_image_url"}
    for empty in choice.empty_days:
        say("Agent", f"availability.find {empty.isoformat()} → no open slots.")
    say("Agent", f"availability.find {choice.day.isoformat()} → {len(choice.slots)} open slots.")
    say("Agent", f"I suggest {slot_sentence(slot)}.")
    if vertical.modality == "remote":
        expect("schedule_address" not in slot, "the online slot carries no address")

    policy = await agent.call("policy.explain", {"service_id": vertical.service_id}, phase="policy_readback")
    if not expect(policy.ok, "policy.explain answered"):
        return mandate
    say("Agent", f"policy.explain → {policy_sentence(policy.value)}")

    arguments = create_arguments(mandate, f"idem_demo_{vertical.key}_1", slot, vertical.customer)
    if vertical.confirmation == "elicitation":
        receipt = await _confirmed_by_host(run, vertical, agent, client, arguments, record)
    else:
        receipt = await _confirmed_by_token(run, vertical, agent, arguments, record)
    if receipt is None:
        return mandate
    status = await agent.call("booking.status", {"booking_id": receipt["booking_id"]}, phase="status")
    if expect(status.ok and status.value["status"] == "booked", "booking.status reads it back as booked"):
        booking = status.value
        record["booking"] = booking
        when = f"{booking['starts_at_local']} {booking['schedule_timezone']} (instant {booking['starts_at']})"
        say("Agent", f"booking.status → {booking['status']}, {when}.")
    run.narrator.block("Receipt", f"{receipt['text']}\nreceipt id: {receipt['id']}")
    audit_ids = [step.result["audit_event_id"] for step in agent.steps if "audit_event_id" in step.result]
    record["audit_event_ids"] = audit_ids
    record["steps"] = _redacted_steps(agent.steps)
    expect(all(step.audit is not None for step in agent.steps), "every call left an audit event")
    say("Agent", "Audit event ids: " + ", ".join(audit_ids))
    return mandate


async def _coda(run: _Run, vertical: Vertical, mandate: BookingMandate, client: OsbpClient) -> None:
    """Over the cap under the same mandate: refused with price_exceeds_mandate, and nothing written."""
    say, expect = run.narrator.say, run.expect
    assert vertical.over_cap_service_id is not None
    run.narrator.section("Fail-closed coda: over the price cap, under the same mandate")
    agent = RecordingAgent(client, run.control, vertical.organization_id, AuditTail(run.audit_log))
    record: dict[str, Any] = {"vertical": vertical.key, "mandate_id": mandate.id}
    run.result.transcript["coda"] = record
    say("User", vertical.over_cap_request or "Upgrade it.")
    describe = await agent.call(
        "service.describe", {"service_id": vertical.over_cap_service_id}, phase="lookup"
    )
    if expect(describe.ok, "service.describe answered"):
        cap = money_text(mandate.max_price.to_wire() if mandate.max_price else None)
        say("Agent", f"service.describe → {service_sentence(describe.value)} The mandate's cap is {cap}.")
    today = local_today(run.platform_now, vertical.region.timezone)
    choice = await find_open_day(
        agent,
        service_id=vertical.over_cap_service_id,
        schedule_id=vertical.schedule_id,
        after=today,
        earliest_time=vertical.preferred_time,
    )
    if not expect(choice is not None, "availability.find found an over-cap slot"):
        return
    assert choice is not None
    slot = pick_slot(choice.slots, vertical.preferred_time)
    before = await run.control.stats(vertical.organization_id)
    arguments = create_arguments(mandate, f"idem_demo_{vertical.key}_over_cap", slot, vertical.customer)
    refused = await agent.call("booking.create", arguments, phase="guardrail")
    after = await run.control.stats(vertical.organization_id)
    say("Agent", f"booking.create {slot['starts_at_local']} → {_outcome(refused)}.")
    if refused.problem:
        say("Agent", f"“{refused.problem.get('message', '')}”")
    expect(refused.problem_code == "price_exceeds_mandate", "refused with price_exceeds_mandate")
    unchanged = before.appointments == after.appointments and before.create_requests == after.create_requests
    expect(
        unchanged,
        f"no platform write: appointments {before.appointments} → {after.appointments}, "
        f"appointment-create requests {before.create_requests} → {after.create_requests}",
    )
    record.update(
        problem=refused.problem,
        audit_event_id=refused.audit_event_id,
        appointments_before=before.appointments,
        appointments_after=after.appointments,
        create_requests_before=before.create_requests,
        create_requests_after=after.create_requests,
    )


def operator_warnings(errlogs: Sequence[Path]) -> list[dict[str, Any]]:
    """The adapter's deprecation warnings found in the servers' stderr logs (JSON lines)."""
    found: list[dict[str, Any]] = []
    for path in errlogs:
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and record.get("event") == "upstream_endpoint_deprecated":
                # The event's own fields; the line's ts/level/logger differ every run.
                found.append({key: value for key, value in record.items() if key not in _LOG_LINE_KEYS})
    return found


def _show_operator_warning(run: _Run) -> None:
    warnings = operator_warnings(run.errlogs)
    run.narrator.section("Operator channel (server stderr, never agent-facing)")
    if not run.expect(bool(warnings), "the adapter warned the operator about the deprecated endpoint"):
        return
    first = warnings[0]
    run.narrator.say(
        "Operator",
        f"{first.get('endpoint')} is deprecated (Deprecation {first.get('deprecation')}, "
        f"Sunset {first.get('sunset')}). {first.get('action', '')}",
    )
    run.narrator.say(
        "Operator", f"(warned once per endpoint per server process: {len(warnings)} process(es))"
    )
    run.result.transcript["operator_warning"] = first


@asynccontextmanager
async def _platform(
    now: datetime | None, spawned: SpawnedPlatform | None
) -> AsyncIterator[SpawnedPlatform | StartingPlatform]:
    if spawned is not None:
        try:
            yield spawned
        finally:
            await spawned.close()
    else:
        async with starting_platform(now) as platform:
            yield platform


async def run_demo(
    vertical_keys: Sequence[str],
    *,
    now: datetime | None,
    audit_log: Path,
    narrator: Narrator,
    spawned: SpawnedPlatform | None = None,
) -> DemoResult:
    """Run the demo for ``vertical_keys`` and return what it proved (``audit_log``'s folder must exist).

    ``spawned`` is a platform process already starting (``osbp demo`` spawns it before its own imports);
    without one the platform starts in a worker thread of this process.
    """
    result = DemoResult(transcript={"verticals": [], "audit_log": str(audit_log)})
    narrator.title("OSBP v0.1.0: an agent books inside a BookingMandate, through the real stack")
    async with _platform(now, spawned) as platform:
        with tempfile.TemporaryDirectory(prefix="osbp-demo-") as workdir:
            run = _Run(narrator, platform.control, platform.base_url, now, Path(workdir), audit_log, result)

            async def platform_up() -> None:
                # The servers start meanwhile: they need only the platform's address.
                await platform.started()
                run.started_at = await platform.control.now()
                clock = run.started_at.isoformat().replace("+00:00", "Z")
                result.transcript["platform_now"] = clock
                narrator.say("Demo", f"platform on 127.0.0.1 (ephemeral port), clock {clock}")

            mandates: dict[str, BookingMandate] = {}
            # One server process for every merchant (calls reach their organization by the ids they
            # carry), each merchant's bookings confirmed its own way: by token, or only in the host's
            # dialog, which the demo's client declares (elicitation) and plays when any merchant needs it.
            verticals = [VERTICALS[key] for key in vertical_keys]
            hosted = any(vertical.confirmation == "elicitation" for vertical in verticals)
            server = ServerJob(
                run.config(verticals), run.errlog("osbp"), host=HostDialog() if hosted else None
            )
            narrator.say("Demo", _confirmation_note(verticals))

            def happy_path(vertical: Vertical) -> Work:
                async def work(client: OsbpClient) -> None:
                    mandates[vertical.key] = await _vertical(run, vertical, client)

                return work

            for turn, key in enumerate(vertical_keys):
                server.work.append((turn, happy_path(VERTICALS[key])))
            coda = next((VERTICALS[key] for key in vertical_keys if VERTICALS[key].over_cap_service_id), None)
            if coda is not None:

                async def fail_closed(client: OsbpClient) -> None:
                    await _coda(run, coda, mandates[coda.key], client)

                # The coda reuses the vertical's mandate and state on the same server.
                server.work.append((len(vertical_keys), fail_closed))
            # The server starts at once, alongside the platform: the first turn waits for both.
            await run_in_turns([server], ahead=len(vertical_keys), before=platform_up)
            _show_operator_warning(run)
    narrator.section("Done")
    narrator.say("Demo", f"audit log: {audit_log} (verify it with `osbp audit verify {audit_log}`)")
    result.transcript["ok"] = result.ok
    result.transcript["failures"] = list(result.failures)
    return result
