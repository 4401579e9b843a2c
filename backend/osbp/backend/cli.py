"""`osbp backend`: run the platform under uvicorn.

One flag per `BackendSettings` field, named from it (`--rate-limit-quota`), and environment
`OSBP_BACKEND_*` fills what the flags leave out. A mistake (a bad value, a port already taken, a public bind
without `--allow-non-loopback`) is one line on stderr naming the flag or variable it came from, and exit
status 2; Ctrl-C is exit status 130. Once serving, one JSON line goes to stdout, `{"event": "ready",
"base_url": "http://127.0.0.1:<port>"}`, so a parent that asked for `--port 0` learns the port; logs are
JSON lines on stderr.

`osbp backend migrate [--db URL]` brings the database's schema to the newest revision and says in one
line what it did (a SQLite database is migrated at every start anyway; a PostgreSQL one only with
`--migrate`, otherwise the platform refuses to start on an old schema and names this command).
"""

from __future__ import annotations

import argparse
import errno
import gc
import json
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

from pydantic import ValidationError

from osbp.backend.settings import BackendSettings, env_var, flag

__all__ = ["build_parser", "main", "settings_from_args"]

PROG = "osbp backend"
#: Older spellings kept working after the flags were derived from the field names.
_ALIASES = {"rate_limit_window_seconds": ("--rate-limit-window",)}


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        """Report a usage error in one line and exit with status 2."""
        self.exit(2, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def _default(field: str) -> str:
    """A field's default as a user would type it: `off` for a false switch, `none` for an empty list."""
    default = BackendSettings.model_fields[field].default
    if default is False:
        return "off"
    if isinstance(default, tuple):
        return ",".join(default) or "none"
    return str(default)


def _help(field: str) -> str:
    info = BackendSettings.model_fields[field]
    shown = "" if info.default is None else f" (default {_default(field)})"
    return f"{info.description}{shown} [{env_var(field)}]"


def build_parser() -> argparse.ArgumentParser:
    """The command line: one flag per settings field, each naming its environment variable."""
    parser = _Parser(
        prog=PROG,
        description="Run the Bookwell synthetic platform. Flags override the environment variables named "
        "in brackets. `osbp backend migrate [--db DB]` migrates the database's schema.",
        allow_abbrev=False,
    )
    for field, info in BackendSettings.model_fields.items():
        names = (flag(field), *_ALIASES.get(field, ()))
        if info.annotation is bool:
            parser.add_argument(*names, dest=field, action="store_true", default=None, help=_help(field))
        else:
            metavar = "N" if info.annotation is int else field.upper()
            parser.add_argument(*names, dest=field, metavar=metavar, help=_help(field))
    return parser


def settings_from_args(args: argparse.Namespace) -> BackendSettings:
    """Settings from the given flags over the environment and defaults."""
    overrides: dict[str, Any] = {key: value for key, value in vars(args).items() if value is not None}
    return BackendSettings(**overrides)


def _source(field: str, args: argparse.Namespace) -> str:
    """Where a setting's value came from, as the user spelled it: `--port 70000` or `OSBP_BACKEND_PORT=…`."""
    given = getattr(args, field, None)
    if given is not None:
        return flag(field) if given is True else f"{flag(field)} {given}"
    if env_var(field) in os.environ:
        return f"{env_var(field)}={os.environ[env_var(field)]}"
    return f"{flag(field)} (default {_default(field)})"


def _describe(error: ValidationError, args: argparse.Namespace) -> str:
    parts = []
    for item in error.errors(include_url=False):
        field = str(item["loc"][0]) if item["loc"] else ""
        if field not in BackendSettings.model_fields:
            parts.append(str(item["msg"]))
            continue
        message = str(item["msg"])
        message = message[:1].lower() + message[1:]
        # Our own messages say what to do; pydantic's get the field's description as the hint.
        own = item["type"] in {
            "non_loopback_host",
            "rfc3339_instant",
            "trusted_proxy",
            "database_url",
            "fault_profile",
        }
        hint = "" if own else f" ({BackendSettings.model_fields[field].description})"
        parts.append(f"{_source(field, args)}: {message}{hint}")
    return "; ".join(parts)


def _bind_failure(error: OSError, settings: BackendSettings, args: argparse.Namespace) -> str:
    where = f"cannot listen on {settings.host}:{settings.port}"
    if error.errno == errno.EADDRINUSE:
        return (
            f"{_source('port', args)}: {where}: the address is already in use; stop what "
            f"holds it or choose another {flag('port')} (0 picks a free one)"
        )
    if error.errno == errno.EACCES:
        return (
            f"{_source('port', args)}: {where}: permission denied (ports below 1024 need "
            f"privileges); choose another {flag('port')}"
        )
    return f"{_source('host', args)}: {where}: {_reason(error)}; choose another {flag('host')}"


def _reason(error: Exception) -> str:
    """The underlying reason: an OSError's text, or the database driver's message under SQLAlchemy's.

    On one line: libpq's connection errors span several.
    """
    cause = getattr(error, "orig", None) or error
    return " ".join(str(getattr(cause, "strerror", None) or cause).split())


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No garbage collection inside the block; what exists at its end is frozen (``gc.freeze``: never
    traversed again), and collection resumes."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


def _stop_at_end_of_input(server: Any) -> None:
    """Read standard input to its end (a closed pipe, or a parent that died), then ask uvicorn to stop.

    uvicorn checks ``should_exit`` on its own event loop's tick: setting it from this thread is the same
    graceful stop as SIGTERM, without a signal (so it works on every system).
    """
    try:
        while os.read(0, 65536):
            pass  # nothing is expected on it; whatever arrives is ignored
    except OSError:
        pass  # no readable stdin at all: as good as closed
    server.should_exit = True


def _fail(message: str) -> int:
    sys.stderr.write(f"{PROG}: {message}\n")
    return 2


def _parse(
    parser: argparse.ArgumentParser, argv: Sequence[str]
) -> tuple[BackendSettings, argparse.Namespace] | int:
    """The settings the command line and environment give, or the exit status after saying why not."""
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2, already explained on stderr)
        return int(exc.code or 0)
    try:
        return settings_from_args(args), args
    except ValidationError as error:
        return _fail(_describe(error, args))


def _migrate(argv: Sequence[str]) -> int:
    """`osbp backend migrate`: apply pending migrations to the `--db` database, one line on stdout."""
    parser = _Parser(
        prog=f"{PROG} migrate",
        description="Bring the platform database's schema to the newest revision.",
        allow_abbrev=False,
    )
    parser.add_argument("--db", dest="db", metavar="DB", help=_help("db"))
    parsed = _parse(parser, argv)
    if isinstance(parsed, int):
        return parsed
    settings, args = parsed
    from sqlalchemy.exc import DatabaseError

    from osbp.backend.database_url import redact
    from osbp.backend.db import Database
    from osbp.backend.schema import SchemaError, upgrade

    try:
        db = Database(settings.db)
    except (OSError, RuntimeError) as error:  # a folder that cannot be made; the driver not installed
        return _fail(f"{_source('db', args)}: {_reason(error)}")
    try:
        before, after = upgrade(db)
    except SchemaError as error:
        return _fail(str(error))
    except (OSError, DatabaseError) as error:
        return _fail(f"{_source('db', args)}: cannot open the database: {_reason(error)}")
    finally:
        db.dispose()
    where = redact(settings.db)
    done = (
        f"already at schema revision {after}"
        if before == after
        else f"migrated {before or 'empty'} -> {after}"
    )
    sys.stdout.write(f"{where}: {done}\n")
    return 0


def main(argv: Sequence[str]) -> int:
    """Run the platform until interrupted (or, given `migrate`, migrate its database)."""
    if list(argv[:1]) == ["migrate"]:
        return _migrate(argv[1:])
    parsed = _parse(build_parser(), argv)
    if isinstance(parsed, int):
        return parsed
    settings, args = parsed
    # The application (FastAPI, SQLAlchemy, uvicorn) is imported only once the settings are valid, so a
    # mistyped flag is answered at once; it and the app built below are long-lived objects only, so the
    # collector is paused while they are made (its passes would be pure start-up cost).
    with _collector_paused():
        from sqlalchemy.exc import DatabaseError

        from osbp.backend.app import create_app
        from osbp.backend.database_url import parse_database, redact
        from osbp.backend.listening import adopt_socket
        from osbp.backend.logs import configure_logging, logger
        from osbp.backend.schema import SchemaError
        from osbp.backend.serving import ReadyServer, bind_socket, http_url, uvicorn_config

    if settings.listen_fd is not None:
        try:
            sock = adopt_socket(settings.listen_fd, allow_non_loopback=settings.allow_non_loopback)
        except ValueError as error:
            return _fail(f"{_source('listen_fd', args)}: {error}")
    else:
        try:
            sock = bind_socket(settings.host, settings.port)
        except OSError as error:  # socket.gaierror included: an unknown host name
            return _fail(_bind_failure(error, settings, args))
    configure_logging(settings.log_level)
    host, port = sock.getsockname()[:2]
    base_url = http_url(host if settings.listen_fd is not None else settings.host, port)
    file = parse_database(settings.db).path
    created = file is not None and not file.exists()
    try:
        with _collector_paused():
            app = create_app(settings)
    except ValueError as error:  # the fault profile names an endpoint the platform does not have
        sock.close()
        return _fail(f"{_source('faults', args)}: {error}")
    except (OSError, DatabaseError) as error:  # the database cannot be created or opened, or is none
        sock.close()
        problem = f"cannot open the database: {_reason(error)}"
        return _fail(f"{_source('db', args)}: {problem}; choose another {flag('db')}")
    except (SchemaError, RuntimeError) as error:  # an old schema; the PostgreSQL driver not installed
        sock.close()
        return _fail(f"{_source('db', args)}: {error}")

    # Webhooks must not reach the platform itself: the socket's real address (after bind, or inherited).
    app.state.runtime.own_addresses.add(sock.getsockname())

    def announce() -> None:
        sys.stdout.write(json.dumps({"event": "ready", "base_url": base_url}) + "\n")
        sys.stdout.flush()
        # Which database, and whether it was made just now: a mistyped --db is seen at once.
        where = {"database": redact(settings.db), "new_database": created}
        logger.info("ready", extra={"base_url": base_url, "testing": settings.enable_testing, **where})

    server = ReadyServer(uvicorn_config(app), on_ready=announce)
    if settings.exit_with_stdin:
        threading.Thread(
            target=_stop_at_end_of_input, args=(server,), name="osbp-backend-stdin", daemon=True
        ).start()
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        # uvicorn shuts down gracefully on Ctrl-C, then re-raises the signal: the stop was asked for, so
        # end with the conventional status for SIGINT instead of a traceback.
        return 130
    finally:
        sock.close()
        app.state.runtime.db.dispose()
    # The re-raised interrupt can be lost on the way out of the event loop: the stop was still a Ctrl-C.
    return 130 if server.interrupted else 0
