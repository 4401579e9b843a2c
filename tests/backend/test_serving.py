"""The real platform under uvicorn on loopback: PlatformServer, the CLI process, and concurrency."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx2
import pytest
from sqlmodel import col, func, select

from osbp.backend.listening import bind_socket, http_url
from osbp.backend.models import Appointment
from osbp.backend.serving import PlatformServer
from tests.support.bookwell import DAY, booking, make_settings, race

pytestmark = pytest.mark.integration

CREATE = "/api/organizations/carolyns_dental/appointments"


def test_platform_server_serves_over_real_http(platform_server):
    """Platform choice: an integration suite against a real uvicorn server on an ephemeral loopback port."""
    assert platform_server.base_url.startswith("http://127.0.0.1:")
    with httpx2.Client(base_url=platform_server.base_url) as client:
        response = client.get("/api/organizations/carolyns_dental")
        assert response.status_code == 200
        assert response.headers["server"] == "Bookwell/0.1.0"
        assert response.json()["id"] == "carolyns_dental"
        created = client.post(CREATE, json=booking(), headers={"Idempotency-Key": "int-1"})
        assert created.status_code == 201
        replay = client.post(CREATE, json=booking(), headers={"Idempotency-Key": "int-1"})
        assert replay.headers["idempotent-replayed"] == "true"


@pytest.mark.anyio
async def test_platform_server_is_an_async_context_manager():
    """Platform choice: async tests can run the real platform too."""
    async with (
        PlatformServer(make_settings()) as server,
        httpx2.AsyncClient(base_url=server.base_url) as client,
    ):
        assert (await client.get("/health")).json() == {"status": "ok"}


def test_a_platform_given_a_bound_socket_serves_on_it_and_a_request_sent_before_it_started_is_answered():
    """Platform choice: a caller binds the port first (`listening`, no web stack), hands out the URL,
    and a client that connects before the platform serves waits in the listen backlog, then gets its
    answer."""
    sock = bind_socket("127.0.0.1", 0)
    url = http_url("127.0.0.1", sock.getsockname()[1])
    with socket.create_connection(sock.getsockname()[:2], timeout=10) as early:
        early.sendall(b"GET /health HTTP/1.1\r\nHost: platform\r\nConnection: close\r\n\r\n")
        with PlatformServer(make_settings(), sock=sock) as server:
            assert server.base_url == url
            answer = b""
            while chunk := early.recv(65536):
                answer += chunk
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert answer.endswith(b'{"status":"ok"}')


def test_concurrent_overlapping_bookings_of_one_provider_have_exactly_one_winner(tmp_path: Path):
    """Platform choice: the platform never double-sells under concurrency (24 clients: one 201, 23 × 409)."""
    settings = make_settings(db=str(tmp_path / "race.db"), rate_limit_quota=10_000)
    times = ["10:00", "10:15", "10:30"]
    bodies = [
        booking(
            time=times[index % 3],
            customer={"display_name": f"Racer {index}", "phone": f"+121255501{index:02d}"},
        )
        for index in range(24)
    ]
    with PlatformServer(settings) as server:
        statuses = race([server.base_url], bodies, [f"race-{index}" for index in range(24)])
        with server.runtime.db.read() as session:
            active = session.exec(
                select(func.count())
                .select_from(Appointment)
                .where(
                    Appointment.provider_id == "carolyns_dental_dr_reyes",
                    col(Appointment.status).in_(("pending", "confirmed")),
                )
            ).one()
            journal = session.connection().exec_driver_sql("PRAGMA journal_mode").scalar()
    assert sorted(statuses) == [201] + [409] * 23
    assert active == 1
    assert journal == "wal"


def test_concurrent_bookings_of_distinct_slots_all_succeed(tmp_path: Path):
    """Platform choice: serialising writers loses nothing: 8 clients on distinct slots → 8 × 201."""
    settings = make_settings(db=str(tmp_path / "distinct.db"))
    slots = [
        (provider, time)
        for provider in ("carolyns_dental_dr_reyes", "carolyns_dental_dr_okafor")
        for time in ("09:00", "10:00", "11:00", "13:00")
    ]
    bodies = [booking(provider_id=provider, time=time) for provider, time in slots]
    with PlatformServer(settings) as server:
        statuses = race([server.base_url], bodies, [f"distinct-{index}" for index in range(len(bodies))])
    assert statuses == [201] * 8


def test_ctrl_c_stops_the_cli_quietly_with_the_sigint_status():
    """Platform choice: an interrupt is a requested stop: exit status 130 and no traceback on stderr."""
    command = [sys.executable, "-m", "osbp", "backend", "--db", ":memory:", "--port", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    threading.Thread(target=lambda: lines.put(process.stdout.readline()), daemon=True).start()  # type: ignore[union-attr]
    try:
        assert json.loads(lines.get(timeout=30))["event"] == "ready"
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)
    assert process.returncode == 130
    assert "Traceback" not in stderr


@pytest.mark.parametrize(
    ("host", "url_prefix"), [("127.0.0.1", "http://127.0.0.1:"), ("::1", "http://[::1]:")]
)
def test_cli_announces_its_ephemeral_port_and_logs_json_with_request_ids(host: str, url_prefix: str):
    """Platform choice: `--port 0` prints one ready line with a usable base URL (an IPv6 literal in
    brackets, RFC 3986 section 3.2.2); stderr logs are JSON lines with request ids."""
    command = [
        sys.executable,
        "-m",
        "osbp",
        "backend",
        "--db",
        ":memory:",
        "--host",
        host,
        "--port",
        "0",
        "--now",
        "2026-05-04T12:00:00Z",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    threading.Thread(target=lambda: lines.put(process.stdout.readline()), daemon=True).start()  # type: ignore[union-attr]
    try:
        ready = json.loads(lines.get(timeout=30))
        assert ready["event"] == "ready"
        assert ready["base_url"].startswith(url_prefix)
        response = httpx2.get(
            ready["base_url"] + f"/api/organizations/carolyns_dental/availability?service_id="
            f"carolyns_dental_cleaning&date={DAY}"
        )
        assert response.status_code == 200
        request_id = response.headers["x-request-id"]
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    records = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    served = [record for record in records if record.get("event") == "request"]
    assert served
    assert served[0]["request_id"] == request_id
    assert served[0]["path"] == "/api/organizations/carolyns_dental/availability"
    assert "service_id" not in stderr  # query strings are not logged


def test_a_port_already_in_use_is_one_line_naming_the_port_flag_and_no_traceback():
    """Platform choice: a taken port is a user-fixable condition: one stderr line, exit status 2."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        command = [sys.executable, "-m", "osbp", "backend", "--db", ":memory:", "--port", str(port)]
        result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2
    assert result.stderr == (
        f"osbp backend: --port {port}: cannot listen on 127.0.0.1:{port}: the address is already in use; "
        "stop what holds it or choose another --port (0 picks a free one)\n"
    )
    assert result.stdout == ""


def test_a_database_path_that_cannot_be_created_is_one_line_naming_the_db_flag(tmp_path: Path):
    """Platform choice: an unusable `--db` path is reported as such, not as a traceback."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("", encoding="utf-8")
    database = blocker / "backend.db"
    command = [sys.executable, "-m", "osbp", "backend", "--db", str(database), "--port", "0"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2
    assert result.stderr.startswith(f"osbp backend: --db {database}: cannot open the database: ")
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_a_database_in_a_folder_that_does_not_exist_is_refused_and_no_folder_is_made(tmp_path: Path):
    """Platform choice: a mistyped `--db` folder is a mistake, not a place to start an empty platform."""
    database = tmp_path / "typo" / "deeper" / "backend.db"
    command = [sys.executable, "-m", "osbp", "backend", "--db", str(database), "--port", "0"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2
    assert result.stderr.startswith(
        f"osbp backend: --db {database}: the folder {database.parent} does not exist ("
    )
    assert result.stderr.count("\n") == 1
    assert not (tmp_path / "typo").exists()


def test_a_file_that_is_not_a_database_is_one_line_not_a_traceback(tmp_path: Path):
    """Platform choice: `--db notes.txt` is refused in one line; the file is left as it was."""
    notes = tmp_path / "notes.txt"
    notes.write_text("shopping list\n", encoding="utf-8")
    command = [sys.executable, "-m", "osbp", "backend", "--db", str(notes), "--port", "0"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2
    assert result.stderr == (
        f"osbp backend: --db {notes}: cannot open the database: file is not a database; choose another --db\n"
    )
    assert notes.read_text(encoding="utf-8") == "shopping list\n"


def test_the_ready_log_line_names_the_database_and_whether_it_was_just_made(tmp_path: Path):
    """Platform choice: the first start on a (mistyped) new file says so; the next start does not."""
    database = tmp_path / "bookwell.db"
    seen = []
    for _ in range(2):
        process = _backend("--db", str(database), "--port", "0")
        try:
            assert process.stdout is not None
            assert json.loads(process.stdout.readline())["event"] == "ready"
        finally:
            process.terminate()
            _, stderr = process.communicate(timeout=30)
        ready = next(r for r in map(json.loads, stderr.splitlines()) if r.get("event") == "ready")
        seen.append((ready["database"], ready["new_database"]))
    assert seen == [(str(database), True), (str(database), False)]


def _statuses(base_url: str, forwarded_for: list[str | None]) -> list[int]:
    """The status of one `GET /health` per entry, each with that `X-Forwarded-For` (None: no header)."""
    with httpx2.Client(base_url=base_url) as client:
        return [
            client.get("/health", headers={} if sent is None else {"X-Forwarded-For": sent}).status_code
            for sent in forwarded_for
        ]


def test_a_forged_x_forwarded_for_does_not_buy_a_fresh_rate_limit_quota():
    """Platform choice: by default the rate-limit key is the TCP peer; proxy headers from it are ignored."""
    with PlatformServer(make_settings(rate_limit_quota=2)) as server:
        statuses = _statuses(server.base_url, [None, None, "203.0.113.7", "198.51.100.9", "::1", "10.0.0.1"])
    assert statuses == [200, 200, 429, 429, 429, 429]


def test_behind_a_trusted_proxy_the_forwarded_address_is_the_rate_limit_key():
    """Platform choice: with `trusted_proxies` naming the peer, X-Forwarded-For names the client."""
    settings = make_settings(rate_limit_quota=1, trusted_proxies="127.0.0.1")
    with PlatformServer(settings) as server:
        statuses = _statuses(server.base_url, ["203.0.113.7", "203.0.113.7", "198.51.100.9", None, None])
    # Each forwarded client has its own window, and so has the proxy itself (no header).
    assert statuses == [200, 429, 200, 200, 429]


def test_a_proxy_outside_the_trusted_networks_is_not_believed():
    """Platform choice: trust is per address: trusted networks that do not hold the peer change nothing."""
    settings = make_settings(rate_limit_quota=1, trusted_proxies="10.0.0.0/8, 192.0.2.1")
    with PlatformServer(settings) as server:
        statuses = _statuses(server.base_url, [None, "203.0.113.7"])
    assert statuses == [200, 429]


def _backend(*args: str, pass_fds: tuple[int, ...] = (), stdin: int | None = None) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "osbp", "backend", "--db", ":memory:", *args]
    return subprocess.Popen(
        command, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, pass_fds=pass_fds
    )


def test_a_listening_socket_handed_down_by_descriptor_is_served_and_announced():
    """Platform choice: `--listen-fd N` serves the inherited socket (the parent knew the address before
    the platform started: a request sent at once waits in the backlog) and announces that address."""
    sock = bind_socket("127.0.0.1", 0)
    url = http_url("127.0.0.1", sock.getsockname()[1])
    process = _backend("--listen-fd", str(sock.fileno()), "--port", "1", pass_fds=(sock.fileno(),))
    sock.close()  # the child holds it now
    try:
        assert process.stdout is not None
        assert json.loads(process.stdout.readline()) == {"event": "ready", "base_url": url}
        assert httpx2.get(url + "/health", trust_env=False).json() == {"status": "ok"}
    finally:
        process.terminate()
        process.communicate(timeout=30)


@pytest.mark.parametrize("kind", ["not_open", "not_a_socket", "not_listening", "udp", "public"])
def test_a_descriptor_that_is_no_loopback_listening_tcp_socket_is_one_line_and_status_2(kind: str):
    """Platform choice: what `--listen-fd` names must be a listening TCP socket on loopback (unless
    `--allow-non-loopback`); anything else is one stderr line naming the flag, and exit status 2."""
    held: list[socket.socket] = []
    read_end, write_end = os.pipe()
    fd = 1000
    if kind == "not_a_socket":
        fd = read_end
    elif kind in {"not_listening", "udp", "public"}:
        family_type = socket.SOCK_DGRAM if kind == "udp" else socket.SOCK_STREAM
        made = socket.socket(socket.AF_INET, family_type)
        made.bind(("0.0.0.0" if kind == "public" else "127.0.0.1", 0))  # noqa: S104  # the refusal under test
        if kind == "public":
            made.listen(1)
        held.append(made)
        fd = made.fileno()
    try:
        process = _backend("--listen-fd", str(fd), pass_fds=(fd,) if fd != 1000 else ())
        stdout, stderr = process.communicate(timeout=60)
    finally:
        for made in held:
            made.close()
        os.close(read_end)
        os.close(write_end)
    expected = {
        "not_open": "is not an open socket",
        "not_a_socket": "is not an open socket",
        "not_listening": "is a TCP socket that is not listening",
        "udp": "is not a TCP socket",
        "public": "listens on 0.0.0.0, not a loopback address",
    }[kind]
    assert process.returncode == 2
    assert stderr.startswith(f"osbp backend: --listen-fd {fd}: descriptor {fd} {expected}")
    assert stderr.count("\n") == 1
    assert stdout == ""


def test_with_exit_with_stdin_closing_standard_input_stops_the_platform_gracefully():
    """Platform choice: `--exit-with-stdin` stops the platform once its stdin is closed (a parent that
    spawned it ends it so, or by dying), with uvicorn's graceful shutdown and exit status 0."""
    process = _backend("--port", "0", "--exit-with-stdin", stdin=subprocess.PIPE)
    try:
        assert process.stdout is not None
        assert process.stdin is not None
        ready = json.loads(process.stdout.readline())
        assert httpx2.get(ready["base_url"] + "/health", trust_env=False).status_code == 200
        process.stdin.close()
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
