"""`osbp conformance`: grade an OSBP MCP server over the wire (stdio, or Streamable HTTP with --url).

    osbp conformance --server "<command line>" --fixtures <file.json> [--scenario-url <url>]
                     [--stats-url <url>] [--status-url <url>] [--catalog-url <url>]
                     [--provider-url <url>] [--location-url <url>]
                     [--audit-log FILE] [--env KEY=VALUE ...] [--cwd DIR]
                     [--timeout S] [--server-log FILE] [--json] [--allow-skips] [--fail-fast]
    osbp conformance --url <http://host:port/mcp> [--token TOKEN] --fixtures <file.json> [hooks as above]
    osbp conformance --self [--transport stdio|streamable-http] [--json] [--timeout S] [--allow-skips]
    osbp conformance --list-checks [--markdown]

Exit status: 0 when every check passed (or, with --allow-skips, when none failed), 1 when any check failed
or was skipped, 2 for a usage error or an unreadable fixture file.
"""

from __future__ import annotations

import argparse
import importlib.util
import shlex
import sys
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from osbp.conformance.battery import Report
    from osbp.conformance.wire import ServerTarget

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="osbp conformance",
        description="Grade an OSBP v0.1.0 MCP server black-box over the MCP wire (stdio or Streamable HTTP).",
    )
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--server", metavar="COMMAND", help="the command line that starts the server (shell-quoted)"
    )
    target.add_argument("--url", metavar="URL", help="a running Streamable HTTP server's MCP endpoint")
    target.add_argument("--self", dest="self_", action="store_true", help="grade this project's own server")
    target.add_argument("--list-checks", action="store_true", help="list the checks and exit")
    parser.add_argument(
        "--fixtures", metavar="FILE", help="the fixture file describing the server's platform"
    )
    parser.add_argument("--scenario-url", metavar="URL", help="where to POST platform outcomes to arm")
    parser.add_argument(
        "--stats-url", metavar="URL", help="where to GET the platform's create-request count (JSON)"
    )
    parser.add_argument(
        "--status-url", metavar="URL", help="where to POST a native status for a booking the battery made"
    )
    parser.add_argument(
        "--catalog-url",
        metavar="URL",
        help="where to POST a new price, fee or cancellation window for the fixtures' repriced service",
    )
    parser.add_argument(
        "--provider-url", metavar="URL", help="where to POST a new name for the repriced service's provider"
    )
    parser.add_argument(
        "--location-url", metavar="URL", help="where to POST a new name for the repriced service's schedule"
    )
    parser.add_argument(
        "--audit-log",
        metavar="FILE",
        help="the server's JSONL audit log, read and graded after the run",
    )
    parser.add_argument(
        "--allow-skips",
        action="store_true",
        help="exit 0 when no check failed even if some were skipped (the verdict still says INCOMPLETE)",
    )
    parser.add_argument(
        "--env",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="a variable for the server (repeatable)",
    )
    parser.add_argument("--cwd", metavar="DIR", help="the server's working directory")
    parser.add_argument("--token", metavar="TOKEN", help="with --url: the bearer token to send")
    parser.add_argument(
        "--transport",
        choices=("stdio", "streamable-http"),
        default="stdio",
        help="with --self: how this project's server is reached (default stdio)",
    )
    parser.add_argument(
        "--timeout", metavar="S", type=float, default=10.0, help="seconds per call (default 10)"
    )
    parser.add_argument("--server-log", metavar="FILE", help="append the server's stderr to FILE")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--fail-fast", action="store_true", help="stop at the first FAIL (the checks not reached are SKIP)"
    )
    parser.add_argument("--markdown", action="store_true", help="with --list-checks: a Markdown table")
    return parser


def _env_pairs(parser: argparse.ArgumentParser, pairs: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            parser.error(f"--env expects KEY=VALUE, got {pair!r}")
        env[key] = value
    return env


def _list_checks(markdown: bool) -> int:
    from osbp.conformance.checks import CATALOG
    from osbp.conformance.report import check_table_markdown

    if markdown:
        print(check_table_markdown())
    else:
        width = max(len(check.id) for check in CATALOG)
        for check in CATALOG:
            print(f"{check.id.ljust(width)}  {check.requirement}  [{check.section}]")
    return 0


def _grade(
    target: ServerTarget,
    fixtures_path: str,
    args: argparse.Namespace,
    *,
    scenario_url: str | None,
    stats_url: str | None,
    status_url: str | None,
    catalog_url: str | None,
    provider_url: str | None = None,
    location_url: str | None = None,
    audit_log: str | None = None,
) -> Report | str:
    import anyio
    from pydantic import ValidationError

    from osbp.conformance.battery import run_battery
    from osbp.conformance.checks import CATALOG
    from osbp.conformance.fixtures import load_fixtures

    try:
        fixtures = load_fixtures(fixtures_path)
    except (OSError, ValueError, ValidationError) as exc:
        return f"cannot read the fixture file {fixtures_path}: {exc}"
    with ExitStack() as stack:
        errlog: IO[str] | None = None
        if args.server_log:
            errlog = stack.enter_context(open(args.server_log, "a", encoding="utf-8"))

        async def grade() -> Report:
            return await run_battery(
                target,
                fixtures,
                scenario_url=scenario_url,
                stats_url=stats_url,
                status_url=status_url,
                catalog_url=catalog_url,
                provider_url=provider_url,
                location_url=location_url,
                audit_log=audit_log,
                call_timeout=args.timeout,
                errlog=errlog,
                fail_fast=args.fail_fast,
            )

        with _working(f"osbp conformance: grading {len(CATALOG)} checks"):
            return anyio.run(grade)


@contextmanager
def _working(what: str) -> Iterator[None]:
    """A spinner and the time elapsed on stderr while ``what`` runs, on a terminal only: piped or logged
    output stays exactly the report."""
    if not sys.stderr.isatty():
        yield
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        progress.add_task(what, total=None)
        yield


def main(argv: Sequence[str]) -> int:
    """Run `osbp conformance` and return its exit status."""
    parser = _parser()
    args = parser.parse_args(list(argv))
    if args.list_checks:
        return _list_checks(args.markdown)
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    # The battery (the MCP SDK, pydantic models) and, for --self, the platform are imported only now:
    # `--help` and a usage error are answered at once.
    from osbp.conformance.report import render_human, render_json
    from osbp.conformance.wire import ServerTarget, server_env

    if args.self_:
        if importlib.util.find_spec("fastapi") is None:
            print(
                "osbp conformance: --self starts this project's platform, the optional `platform` extra: "
                "pip install 'osbp[platform]' (in a checkout: .venv/bin/pip install -e '.[platform]')",
                file=sys.stderr,
            )
            return 2
        from osbp.conformance.self_target import self_target  # the platform: only for --self

        with self_target(transport=args.transport) as own:
            outcome = _grade(
                own.target,
                str(own.fixtures_path),
                args,
                scenario_url=own.scenario_url,
                stats_url=own.stats_url,
                status_url=own.status_url,
                catalog_url=own.catalog_url,
                provider_url=own.provider_url,
                location_url=own.location_url,
                audit_log=str(own.audit_log),
            )
    else:
        if not args.fixtures:
            parser.error(f"{'--url' if args.url else '--server'} needs --fixtures")
        if args.url:
            target = ServerTarget(command=(), url=args.url, token=args.token)
        else:
            command = shlex.split(args.server)
            if not command:
                parser.error("--server is empty")
            target = ServerTarget(command=command, env=server_env(_env_pairs(parser, args.env)), cwd=args.cwd)
        outcome = _grade(
            target,
            args.fixtures,
            args,
            scenario_url=args.scenario_url,
            stats_url=args.stats_url,
            status_url=args.status_url,
            catalog_url=args.catalog_url,
            provider_url=args.provider_url,
            location_url=args.location_url,
            audit_log=args.audit_log,
        )
    if isinstance(outcome, str):
        print(f"osbp conformance: {outcome}", file=sys.stderr)
        return 2
    print(render_json(outcome) if args.json else render_human(outcome))
    return 0 if outcome.passes(allow_skips=args.allow_skips) else 1
