"""Record the trace gallery from real runs and write it, with its README index, byte for byte the same.

:func:`record_gallery` starts one platform with its clock frozen at the gallery's instant and, for each
scenario, resets the platform to seed data, launches a fresh OSBP MCP server subprocess (fresh state file,
its own audit log, its clock frozen at the same instant), plays the scenario through the MCP SDK client
and turns the recorded steps into a redacted, aliased :class:`~osbp.demo.trace_format.Trace`. A scenario
whose run does not show what it claims (its guardrail codes, a receipt for a happy path) fails the
recording instead of producing a misleading trace. :func:`write_gallery` replaces the folder's traces and
README in one go. Nothing depends on the real date: both clocks are frozen, so the gallery regenerates
the same bytes in any year.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from datetime import datetime
from functools import partial
from pathlib import Path

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from osbp.demo.client import OsbpClient, ServerConfig
from osbp.demo.gallery import GALLERY, GALLERY_NOW, GalleryScenario, Play
from osbp.demo.playbook import read_code_from_phone
from osbp.demo.recorder import AuditTail, RecordingAgent, RecordingHost, unbound_summaries
from osbp.demo.stack import PlatformControl, running_platform
from osbp.demo.trace_format import (
    Trace,
    TraceExpected,
    TraceRegion,
    TraceScenario,
    build_trace,
    dump_trace,
    load_trace,
)
from osbp.demo.turns import ServerJob, Work, run_in_turns
from osbp.server.audit import format_created_at

__all__ = [
    "INDEX_NAME",
    "RecordingError",
    "gallery_clock",
    "gallery_files",
    "read_gallery",
    "record_gallery",
    "render_index",
    "write_gallery",
]

INDEX_NAME = "README.md"


class RecordingError(RuntimeError):
    """A scenario's run did not show what the scenario claims."""


def gallery_clock(now: datetime) -> str:
    """The trace's ``clock``: the frozen instant, written as the audit log writes ``created_at``."""
    return format_created_at(now)


def _scenario_block(scenario: GalleryScenario, play: Play) -> TraceScenario:
    vertical = scenario.vertical
    return TraceScenario(
        id=scenario.id,
        title=scenario.title,
        claim=scenario.claim,
        business_type=vertical.business_type,
        modality=vertical.modality,
        region=TraceRegion(
            country=vertical.region.country,
            currency=vertical.region.currency,
            timezone=vertical.region.timezone,
        ),
        intent=vertical.intent,
        user_request=vertical.user_request,
        organization_id=vertical.organization_id,
        organization_name=vertical.organization_name,
        selection=play.selection,
        expected=TraceExpected(happy_path=scenario.outcome, guardrails=list(scenario.guardrails)),
    )


def _check_claims(scenario: GalleryScenario, trace: Trace) -> None:
    codes = {str(step.result["problem"]["code"]) for step in trace.steps if "problem" in step.result}
    missing = [code for code in scenario.guardrails if code not in codes]
    if missing:
        raise RecordingError(
            f"{scenario.id}: the run never showed {', '.join(missing)} (saw {sorted(codes)})"
        )
    booked = scenario.outcome != "no_booking_created"
    if booked != (trace.receipt is not None):
        raise RecordingError(f"{scenario.id}: expected {scenario.outcome}, receipt={trace.receipt}")
    writes = [step for step in trace.steps if step.platform_write]
    if not booked and writes:
        raise RecordingError(f"{scenario.id}: a refused run wrote to the platform (step {writes[0].step})")
    replays = [step for step in trace.steps if (step.result.get("osbp_runtime") or {}).get("idempotency")]
    if scenario.outcome == "same_receipt_replayed" and not replays:
        raise RecordingError(f"{scenario.id}: no step replayed the receipt from the idempotency cache")
    answers = tuple(
        exchange["response"].get("action") for step in trace.steps for exchange in step.host_dialog or []
    )
    if answers != scenario.host_answers:
        raise RecordingError(f"{scenario.id}: the host was answered {answers}, not {scenario.host_answers}")


async def _record_one(
    scenario: GalleryScenario, client: OsbpClient, control: PlatformControl, audit_log: Path, now: datetime
) -> Trace:
    await control.reset()
    agent = RecordingAgent(client, control, scenario.vertical.organization_id, AuditTail(audit_log))
    if isinstance(client.host, RecordingHost):
        # The user types into the host's code form what the merchant sent to their phone.
        purpose = f"booking:{scenario.vertical.organization_id}"
        client.host.code_source = partial(read_code_from_phone, agent, purpose)
    play = Play(agent=agent, vertical=scenario.vertical, now=now, scenario_id=scenario.id)
    await scenario.play(play)
    if scenario.host_answers and client.protocol_version in MODERN_PROTOCOL_VERSIONS:
        # The README and the trace say the host was asked in-request; a round-trip client would need its own.
        raise RecordingError(f"{scenario.id}: the client negotiated {client.protocol_version}")
    for step in agent.steps:
        for problem in unbound_summaries(step):
            raise RecordingError(f"{scenario.id}: {step.tool}: {problem}")
    trace = build_trace(
        name=scenario.id,
        scenario=_scenario_block(scenario, play),
        clock=gallery_clock(now),
        steps=agent.steps,
        mandate=play.mandate.to_wire() if play.mandate is not None else None,
        receipt=play.receipt,
        protocol_version=client.protocol_version if scenario.host_answers else None,
    )
    _check_claims(scenario, trace)
    return trace


async def record_gallery(
    scenarios: Sequence[GalleryScenario] = GALLERY, *, now: datetime = GALLERY_NOW
) -> dict[str, Trace]:
    """Record every scenario through the real stack; scenario id -> trace, in gallery order."""
    traces: dict[str, Trace] = {}
    async with running_platform(now) as platform:
        with tempfile.TemporaryDirectory(prefix="osbp-traces-") as tmp:
            workdir = Path(tmp)
            jobs: list[ServerJob] = []
            for turn, scenario in enumerate(scenarios):
                config = ServerConfig(
                    platform_base_url=platform.base_url,
                    organization_id=scenario.vertical.organization_id,
                    state_path=workdir / f"{scenario.id}.sqlite3",
                    audit_log_path=workdir / f"{scenario.id}-audit.jsonl",
                    now=now,
                )

                def work(scenario: GalleryScenario = scenario, config: ServerConfig = config) -> Work:
                    async def run(client: OsbpClient) -> None:
                        traces[scenario.id] = await _record_one(
                            scenario, client, platform.control, config.audit_log_path, now
                        )

                    return run

                # A scenario confirmed through the host gets a client that declares form elicitation.
                host = RecordingHost(scenario.host_answers) if scenario.host_answers else None
                errlog = workdir / f"{scenario.id}-stderr.log"
                jobs.append(ServerJob(config, errlog, [(turn, work())], host=host))
            await run_in_turns(jobs)
    return {scenario.id: traces[scenario.id] for scenario in scenarios}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _host_paragraph(traces: Sequence[Trace]) -> list[str]:
    """What the traces confirmed through the host show, and which shape of elicitation they record."""
    hosted = [trace for trace in traces if any(step.host_dialog for step in trace.steps)]
    if not hosted:
        return []
    names = ", ".join(f"[{trace.name}]({trace.name}.json)" for trace in hosted)
    versions = ", ".join(sorted({str(trace.recording.get("mcp_protocol_version")) for trace in hosted}))
    return [
        "Confirmed through the host (MCP elicitation) instead of by the approval token:",
        f"{names}.",
        "The client declares form elicitation and plays the host's dialog; each booking.create step keeps,",
        "in `host_dialog`, every request the server sent the user during the call (the summary and the",
        "yes/no form, or the form for the verification code, as sent) and the user's answer (a typed code",
        "`[redacted]`), and in `audit.confirmation` the mode, the summary and payload hashes (aliased) and",
        "the answers. The shape recorded is the classic in-request `elicitation/create`,",
        "because that is what `make demo`'s client negotiates: the SDK's `initialize` handshake settles on",
        f"MCP {versions}, where the server asks while the call is open. The 2026-07-28 `input_required`",
        "round trip needs a client that negotiates that revision; the demo's does not, and the gallery",
        "records what the demo does.",
        "",
    ]


def render_index(traces: Sequence[Trace]) -> str:
    """``traces/README.md``: what the gallery is, how it is made, and one row per trace."""
    lines = [
        "# OSBP trace gallery",
        "",
        "Recorded from real runs, never written by hand: `make traces` (`osbp traces record`) drives",
        "the OSBP MCP server over stdio through the MCP SDK client against the synthetic platform with a",
        "fresh database and a frozen clock, then redacts and aliases every run. Regenerating leaves",
        "`git status` clean; `osbp traces replay` replays every trace against a fresh platform and checks",
        "that each recorded result is a subset of the actual one. The files follow the upstream OSBP v0.1.0",
        "gallery layout (its keys, in its order, with its types) plus extra keys of ours; `docs/demo.md`",
        "describes every field and what the layout does not promise.",
        "",
        *_host_paragraph(traces),
        "| trace | scenario | claim | guardrails shown |",
        "|---|---|---|---|",
    ]
    for trace in traces:
        scenario = trace.scenario
        where = f"{scenario.organization_name}, {scenario.region.timezone}, {scenario.region.currency}"
        guardrails = ", ".join(f"`{code}`" for code in scenario.expected.guardrails) or "—"
        lines.append(
            f"| [{trace.name}]({trace.name}.json) | {_cell(scenario.title)} ({_cell(where)}) "
            f"| {_cell(scenario.claim)} | {guardrails} |"
        )
    return "\n".join(lines) + "\n"


def gallery_files(traces: Sequence[Trace]) -> dict[str, str]:
    """File name -> exact text, for every trace plus the README index."""
    files = {f"{trace.name}.json": dump_trace(trace) for trace in traces}
    files[INDEX_NAME] = render_index(traces)
    return files


def write_gallery(files: dict[str, str], out_dir: Path) -> list[Path]:
    """Write ``files`` into ``out_dir``, removing traces that are no longer part of the gallery."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in out_dir.glob("*.json"):
        if stale.name not in files:
            stale.unlink()
    written = []
    for name, text in files.items():
        path = out_dir / name
        path.write_text(text, encoding="utf-8", newline="\n")
        written.append(path)
    return written


def read_gallery(paths: Sequence[Path]) -> list[Trace]:
    """Parse trace files."""
    return [load_trace(path.read_text(encoding="utf-8")) for path in paths]
