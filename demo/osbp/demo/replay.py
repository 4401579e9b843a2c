"""Replay gallery traces against a fresh platform through the MCP server and check them.

For each trace: reset the platform to seed data with the trace's frozen clock, launch a fresh OSBP MCP
server subprocess with its clock frozen at the same instant (so nothing depends on the real date), and
replay every step's input through the MCP SDK client. Redacted inputs are filled back in from where the
trace says they came from: a synthetic replay customer for customer fields, the token of the latest
final-confirmation challenge for ``approval.token``, the code the platform just sent for
``verification_code`` (or a wrong one when the original was ``mistyped``). Aliases seen in results
(``booking_alias_1``, ``aud_alias_3``) are bound to the actual values on first sight and substituted into
later inputs. A trace whose steps asked the user through the host (``host_dialog``) is replayed with a
client that declares form elicitation and answers each request as the trace's user did.

The check: each recorded result and audit event must be a *subset* of the actual one (every recorded key
present with a matching value; lists element by element, or as an ordered subset with the recorded total
when the trace shortened them), where aliases, placeholders and ``[redacted]`` match any text; each
step's ``platform_write`` and ``platform_create_requests`` must be the same, and its ``audit_event_id``
alias must match the actual envelope's ``audit_event_id``. A step's recorded ``host_dialog`` must be a
subset of what the server actually sent the host (the summary text and the form, each request in order),
and the audit must bind the summary the host actually showed (its SHA-256 is the ``confirmation``
record's ``summary_hash``).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast, get_args

from osbp.demo.aliases import ALIAS_PATTERN, PLACEHOLDER_PATTERN
from osbp.demo.client import OsbpClient, ServerConfig
from osbp.demo.playbook import approval_token, read_code_from_phone
from osbp.demo.recorder import (
    ARM,
    MISTYPED,
    AuditTail,
    RecordingAgent,
    RecordingHost,
    Setup,
    unbound_summaries,
)
from osbp.demo.scenarios import HostAnswer
from osbp.demo.stack import ArmableOutcome, PlatformControl, running_platform
from osbp.demo.trace_format import Trace, TraceStep
from osbp.demo.turns import ServerJob, Work, run_in_turns
from osbp.protocol.timeutil import parse_instant
from osbp.server.redaction import REDACTED

__all__ = ["REPLAY_CUSTOMER", "Mismatch", "ReplayReport", "is_subset", "replay_traces"]

#: Who the customer is during replay (the recorded customer was redacted).
REPLAY_CUSTOMER: dict[str, str] = {
    "display_name": "Replay Customer",
    "given_name": "Replay",
    "family_name": "Customer",
    "phone": "+12125550123",
    "email": "replay.customer@example.com",
}


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One difference between a recorded step and its replay."""

    step: int
    path: str
    expected: Any
    actual: Any


@dataclass
class ReplayReport:
    """The outcome of replaying one trace."""

    trace: str
    steps: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every step matched."""
        return not self.mismatches


def _text_matches(expected: str, actual: str, bindings: dict[str, str]) -> bool:
    """``expected`` with its aliases/placeholders as wildcards (bound aliases literal) matches ``actual``."""
    pattern, names, position = "", [], 0
    for match in PLACEHOLDER_PATTERN.finditer(expected):
        pattern += re.escape(expected[position : match.start()])
        token = match.group(0)
        if token in bindings:
            pattern += re.escape(bindings[token])
        else:
            pattern += "(.+?)"
            names.append(token)
        position = match.end()
    pattern += re.escape(expected[position:])
    found = re.fullmatch(pattern, actual, re.DOTALL)
    if found is None:
        return False
    for name, value in zip(names, found.groups(), strict=True):
        if ALIAS_PATTERN.fullmatch(name) and not name.startswith("<"):
            bindings.setdefault(name, value)
    return True


def is_subset(
    expected: Any,
    actual: Any,
    bindings: dict[str, str],
    *,
    path: str = "",
    truncated: dict[str, Any] | None = None,
) -> list[tuple[str, Any, Any]]:
    """The differences (path, expected, actual) where ``expected`` is not a subset of ``actual``."""
    truncated = truncated or {}
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [(path, expected, actual)]
        differences = []
        for key, value in expected.items():
            where = f"{path}.{key}" if path else key
            if key not in actual:
                differences.append((where, value, "<absent>"))
            else:
                differences += is_subset(value, actual[key], bindings, path=where, truncated=truncated)
        return differences
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [(path, expected, actual)]
        if path in truncated:
            return _ordered_subset(expected, actual, bindings, path, int(truncated[path]["total"]))
        if len(expected) != len(actual):
            return [(f"{path}.length", len(expected), len(actual))]
        differences = []
        for index, (item, other) in enumerate(zip(expected, actual, strict=True)):
            differences += is_subset(item, other, bindings, path=f"{path}[{index}]")
        return differences
    if isinstance(expected, str) and isinstance(actual, str):
        return [] if _text_matches(expected, actual, bindings) else [(path, expected, actual)]
    if isinstance(expected, str) and expected == REDACTED:
        return []  # a redacted non-string (a number typed as a code) matches anything
    return [] if expected == actual else [(path, expected, actual)]


def _ordered_subset(
    expected: list[Any], actual: list[Any], bindings: dict[str, str], path: str, total: int
) -> list[tuple[str, Any, Any]]:
    if len(actual) != total:
        return [(f"{path}.length", total, len(actual))]
    cursor = 0
    for index, item in enumerate(expected):
        while cursor < len(actual) and is_subset(item, actual[cursor], dict(bindings)):
            cursor += 1
        if cursor == len(actual):
            return [(f"{path}[{index}]", item, "<no matching element in order>")]
        is_subset(item, actual[cursor], bindings)  # bind the aliases of the element that matched
        cursor += 1
    return []


def _host_answers(step: TraceStep) -> list[HostAnswer]:
    """The answers the trace's user gave the host during ``step``, in order."""
    answers = [str((exchange.get("response") or {}).get("action")) for exchange in step.host_dialog or []]
    unknown = [answer for answer in answers if answer not in get_args(HostAnswer)]
    if unknown:
        raise ValueError(f"step {step.step}: unknown host answer {unknown[0]!r}")
    return [cast(HostAnswer, answer) for answer in answers]


def _hosted(trace: Trace) -> bool:
    return any(step.host_dialog for step in trace.steps)


def _setup(action: dict[str, str]) -> Setup:
    outcome = action.get(ARM)
    if outcome not in get_args(ArmableOutcome):
        raise ValueError(f"unknown setup action {action!r}")
    return {ARM: cast(ArmableOutcome, outcome)}


@dataclass
class _Replayer:
    """Fills redacted inputs back in and remembers what later steps need."""

    agent: RecordingAgent
    bindings: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)

    def _fill(self, node: Any, path: str) -> Any:
        if isinstance(node, dict):
            return {key: self._fill(value, f"{path}.{key}" if path else key) for key, value in node.items()}
        if isinstance(node, list):
            return [self._fill(item, path) for item in node]
        if isinstance(node, str):
            if node == REDACTED and path.startswith("customer."):
                return REPLAY_CUSTOMER.get(path.removeprefix("customer."), node)
            return ALIAS_PATTERN.sub(lambda match: self.bindings.get(match.group(0), match.group(0)), node)
        return node

    async def hydrate(self, step: TraceStep) -> dict[str, Any]:
        arguments: dict[str, Any] = self._fill(step.input, "")
        sources = step.input_sources or {}
        approval = arguments.get("approval")
        if isinstance(approval, dict) and approval.get("token") == REDACTED:
            approval["token"] = self.tokens.get(str(arguments.get("idempotency_key")), REDACTED)
        if arguments.get("verification_code") == REDACTED:
            purpose = f"booking:{arguments['mandate']['organization_id']}"
            code = await read_code_from_phone(self.agent, purpose) or "000000"
            if sources.get("verification_code") == MISTYPED:
                code = "000000" if code != "000000" else "111111"
            arguments["verification_code"] = code
        return arguments

    def remember(self, arguments: dict[str, Any], envelope: dict[str, Any]) -> None:
        token = approval_token(str((envelope.get("problem") or {}).get("message", "")))
        if token is not None:
            self.tokens[str(arguments.get("idempotency_key"))] = token


async def _replay_one(
    trace: Trace, client: OsbpClient, control: PlatformControl, audit_log: Path
) -> ReplayReport:
    await control.reset()
    now = parse_instant(trace.clock)
    if now is not None and now != await control.now():
        await control.set_now(now)
    agent = RecordingAgent(client, control, trace.scenario.organization_id, AuditTail(audit_log))
    replayer = _Replayer(agent)
    report = ReplayReport(trace=trace.name)
    host = client.host if isinstance(client.host, RecordingHost) else None
    if host is not None:
        host.code_source = partial(read_code_from_phone, agent, f"booking:{trace.scenario.organization_id}")
    for step in trace.steps:
        arguments = await replayer.hydrate(step)
        setup = [_setup(action) for action in step.setup or []]
        if host is not None:
            host.expect(_host_answers(step))
        call = await agent.call(step.tool, arguments, phase=step.phase, setup=setup)
        replayer.remember(arguments, call.envelope)
        actual = agent.steps[-1]
        if host is not None:
            shown = [exchange.to_wire() for exchange in actual.host_dialog]
            for where, expected, got in is_subset(step.host_dialog or [], shown, replayer.bindings):
                report.mismatches.append(Mismatch(step.step, f"host_dialog{where}", expected, got))
            for unbound in unbound_summaries(actual):
                mismatch = Mismatch(step.step, "audit.confirmation", "the shown summary's hash", unbound)
                report.mismatches.append(mismatch)
        truncated = {f"{key}": value for key, value in (step.truncated or {}).items()}
        for where, expected, got in is_subset(
            step.result, call.envelope, replayer.bindings, truncated=truncated
        ):
            report.mismatches.append(Mismatch(step.step, f"result.{where}", expected, got))
        if step.audit_event_id is not None:
            for where, expected, got in is_subset(
                step.audit_event_id, call.envelope.get("audit_event_id"), replayer.bindings
            ):
                report.mismatches.append(Mismatch(step.step, f"audit_event_id{where}", expected, got))
        if step.audit is not None:
            # Both clocks are frozen and upstream is the last-issued call, so the audit replays too.
            for where, expected, got in is_subset(step.audit, actual.audit or {}, replayer.bindings):
                report.mismatches.append(Mismatch(step.step, f"audit.{where}", expected, got))
        if actual.platform_write != step.platform_write:
            report.mismatches.append(
                Mismatch(step.step, "platform_write", step.platform_write, actual.platform_write)
            )
        if actual.platform_create_requests != step.platform_create_requests:
            report.mismatches.append(
                Mismatch(
                    step.step,
                    "platform_create_requests",
                    step.platform_create_requests,
                    actual.platform_create_requests,
                )
            )
        report.steps += 1
    return report


async def replay_traces(traces: Sequence[Trace]) -> list[ReplayReport]:
    """Replay ``traces`` one after another against one fresh platform (reset before each trace)."""
    if not traces:
        return []
    reports: dict[str, ReplayReport] = {}
    first_now = parse_instant(traces[0].clock)
    async with running_platform(first_now) as platform:
        with tempfile.TemporaryDirectory(prefix="osbp-replay-") as tmp:
            workdir = Path(tmp)
            jobs: list[ServerJob] = []
            for turn, trace in enumerate(traces):
                config = ServerConfig(
                    platform_base_url=platform.base_url,
                    organization_id=trace.scenario.organization_id,
                    state_path=workdir / f"{turn}-{trace.name}.sqlite3",
                    audit_log_path=workdir / f"{turn}-{trace.name}-audit.jsonl",
                    now=parse_instant(trace.clock),
                )

                def work(trace: Trace = trace, config: ServerConfig = config, key: str = f"{turn}") -> Work:
                    async def run(client: OsbpClient) -> None:
                        reports[key] = await _replay_one(
                            trace, client, platform.control, config.audit_log_path
                        )

                    return run

                errlog = workdir / f"{turn}-{trace.name}-stderr.log"
                # The trace's user confirmed in the host's dialog: so does the replay's, as recorded.
                host = RecordingHost() if _hosted(trace) else None
                jobs.append(ServerJob(config, errlog, [(turn, work())], host=host))
            await run_in_turns(jobs)
    return [reports[str(turn)] for turn in range(len(traces))]
