"""Final confirmation through the host: the checks of a server that asks the user by MCP elicitation.

Beyond the spec (v0.1.0 knows only the token path; its Security section names host-enforced
confirmation as what production needs). The battery opens a second session to the server, declaring form
elicitation and playing the host's UI itself. A server that answers that session with the token
challenge instead does not offer the path: the three checks are SKIP, never PASS.

- `elicitation.accept_books_once`: an accepted confirmation books, and a retry replays the receipt
  without asking the user again (and, with the stats hook, adds no second appointment);
- `elicitation.decline_books_nothing`: a declined confirmation is a failure that is not retryable and
  books nothing;
- `elicitation.summary_bound`: what the user was shown contains the summary the token path shows for the
  same booking.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import IO, Any

from mcp.types import ElicitRequestFormParams, ElicitResult, ErrorData

from osbp.conformance.flows import challenge
from osbp.conformance.grading import expect
from osbp.conformance.payloads import CREATE, approval_token
from osbp.conformance.probe import Probe
from osbp.conformance.scenario import appointments
from osbp.conformance.summary_checks import summary_text
from osbp.conformance.wire import ServerTarget, Wire, open_wire

__all__ = ["CHECK_IDS", "Host", "grade_elicitation"]

CHECK_IDS = (
    "elicitation.accept_books_once",
    "elicitation.decline_books_nothing",
    "elicitation.summary_bound",
)


@dataclass
class Host:
    """The host's UI as the battery plays it: records every message, answers the next queued action."""

    answers: list[str] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)

    async def __call__(self, context: Any, params: Any) -> ElicitResult | ErrorData:
        """Answer one elicitation: a form confirmation is accepted or declined as queued."""
        if not isinstance(params, ElicitRequestFormParams):
            return ErrorData(code=-32602, message="the battery's host answers form elicitation only")
        self.shown.append(params.message)
        action = self.answers.pop(0) if self.answers else "cancel"
        content = {"confirm": True} if action == "accept" else None
        return ElicitResult(action=action, content=content)


async def _count(probe: Probe) -> int | None:
    if probe.stats_url is None:
        return None
    count = await appointments(probe.stats_url, call_timeout=probe.call_timeout)
    expect(not isinstance(count, str), str(count))
    return None if isinstance(count, str) else count


async def grade_elicitation(probe: Probe, target: ServerTarget, errlog: IO[str]) -> float:
    """Grade the three elicitation checks on a second session that declares form elicitation.

    Returns the seconds that session waited out rate limits (the run's report counts them too).
    """
    host = Host()
    async with open_wire(target, call_timeout=probe.call_timeout, errlog=errlog, elicitation=host) as wire:
        try:
            return await _hosted(probe, host, wire)
        finally:
            # The session's calls are the run's too (the osbp_runtime and audit checks grade them).
            probe.other_exchanges.extend(wire.exchanges)


async def _hosted(probe: Probe, host: Host, wire: Wire) -> float:
    """The three checks on the hosted session; the seconds it waited out rate limits."""
    hosted = replace(probe, wire=wire)
    service = probe.fixtures.services.fixed_usd.id
    host.answers.append("decline")
    payload = probe.payloads.create(service)
    before = await _count(probe)
    first = await wire.call(CREATE, payload)
    if not host.shown:
        reason = (
            "the server did not ask through the host for a client declaring form elicitation"
            f" ({first.describe()})"
        )
        for check_id in CHECK_IDS:
            probe.grader.skipped(check_id, reason)
        return wire.rate_limit_waited
    with probe.grader.check("elicitation.decline_books_nothing"):
        expect(first.ok is False, "a declined confirmation booked", observed=first.describe())
        expect(
            first.problem.get("retryable") is False,
            "a declined confirmation is answered retryable",
            expected="a Problem with retryable false",
            observed=first.describe(),
        )
        expect(approval_token(first.message) is None, "the refusal carries an approval token")
        after = await _count(probe)
        expect(before == after, "the platform holds a new appointment after a decline")
    await _accept_books_once(hosted, host, service)
    await _summary_bound(probe, hosted, host, service)
    return wire.rate_limit_waited


async def _accept_books_once(hosted: Probe, host: Host, service: str) -> None:
    with hosted.grader.check("elicitation.accept_books_once"):
        payload = hosted.payloads.create(service)
        host.answers.append("accept")
        asked = len(host.shown)
        before = await _count(hosted)
        booked = await hosted.wire.call(CREATE, payload)
        expect(booked.ok is True, "an accepted confirmation did not book", observed=booked.describe())
        again = await hosted.wire.call(CREATE, payload)
        expect(
            again.ok is True and again.value == booked.value,
            "the retry of a confirmed booking does not replay its receipt",
            expected=str(booked.value),
            observed=again.describe(),
        )
        expect(
            len(host.shown) == asked + 1,
            "the user was asked again for a booking already confirmed",
            expected="one confirmation",
            observed=f"{len(host.shown) - asked} confirmations",
        )
        after = await _count(hosted)
        if before is not None and after is not None:
            expect(after == before + 1, "not exactly one new appointment", observed=f"{after - before}")


async def _summary_bound(probe: Probe, hosted: Probe, host: Host, service: str) -> None:
    with probe.grader.check("elicitation.summary_bound"):
        token_view, token = await challenge(probe, probe.payloads.create(service))
        expect(token is not None, f"expected an approval challenge, got {token_view.describe()}")
        summary = summary_text(token_view.message).split("\n\n")[-1].strip()
        host.answers.append("decline")
        asked = len(host.shown)
        await hosted.wire.call(CREATE, hosted.payloads.create(service))
        expect(len(host.shown) == asked + 1, "the server did not ask the user through the host")
        shown = host.shown[-1]
        expect(
            summary in shown,
            "the user was shown another summary than the token path's for the same booking",
            expected=summary[:400],
            observed=shown[:400],
        )
