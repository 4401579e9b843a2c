"""The server's stdin: lines the MCP SDK reads pass through in order; every other line is answered."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp.shared.message import SessionMessage
from mcp.types.jsonrpc import JSONRPCError

from osbp.server.logs import json_formatter
from osbp.server.stdin import StdinLines
from tests.support.jsonrpc import REQUEST, holding, request
from tests.support.logs import capture_logs, events, fields
from tests.support.stdio import StdioServer

SECRET = "zelda.sentinel@example.org"


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    """A real pipe: the server's end to read, the host's end to write."""
    read_end, write_end = os.pipe()
    yield read_end, write_end
    for fd in (read_end, write_end):
        with contextlib.suppress(OSError):  # the test closed the host's end to signal end of input
            os.close(fd)


@pytest.mark.anyio
async def test_readable_lines_pass_in_order_and_the_others_are_answered_on_the_writer(pipe) -> None:
    """JSON-RPC 2.0 §5: every request gets a response; the valid ones reach the SDK untouched, in order;
    the log names code and id, never the line."""
    read_end, write_end = pipe
    notification = '{"jsonrpc":"2.0","method":"notifications/initialized"}'
    bad = holding(f'"{SECRET} \\udfff"', id=8)
    lines = [
        REQUEST,
        "garbage",
        notification,
        "",
        bad,
        request(id=..., params=[1]),
        '{"jsonrpc":"2.0","id":9}',
    ]
    os.write(write_end, "".join(line + "\n" for line in lines).encode())
    os.close(write_end)
    send, receive = anyio.create_memory_object_stream[SessionMessage](10)
    with send, receive, capture_logs(logging.INFO) as records, anyio.fail_after(30):
        stdin = StdinLines(read_end)
        stdin.answer_through(send)
        passed = [line async for line in stdin]
        answers = [receive.receive_nowait().message for _ in range(3)]
        with pytest.raises(anyio.WouldBlock):
            receive.receive_nowait()
    assert passed == [REQUEST + "\n", notification + "\n"]
    assert [(answer.id, answer.error.code) for answer in answers if isinstance(answer, JSONRPCError)] == [
        (None, -32700),
        (8, -32700),
        (9, -32600),
    ]
    logged = [fields(record) for record in events(records, "jsonrpc_request_rejected")]
    assert [(entry["code"], entry["id"], entry["answered"]) for entry in logged] == [
        (-32700, None, True),
        (-32700, 8, True),
        (-32600, None, False),
        (-32600, 9, True),
    ]
    written = "".join(json_formatter().format(record) for record in records)
    assert SECRET not in written


class _Signal(logging.Handler):
    """Sets an event when the reader logs a rejection (the reader logs on the event loop's thread)."""

    def __init__(self, event: anyio.Event) -> None:
        super().__init__(logging.INFO)
        self.event = event

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == "jsonrpc_request_rejected":
            self.event.set()


@pytest.mark.anyio
async def test_a_rejection_waits_for_the_writer_and_is_dropped_once_it_is_closed(pipe) -> None:
    """Platform choice: an answer is never lost before the SDK's writer exists, and a stopping server
    (its writer closed) ends the reader instead of failing it."""
    read_end, write_end = pipe
    os.write(write_end, f"garbage\nmore garbage\n{REQUEST}\n".encode())
    os.close(write_end)
    send, receive = anyio.create_memory_object_stream[SessionMessage](0)
    stdin = StdinLines(read_end)
    lines: list[str] = []
    rejected = anyio.Event()
    signal = _Signal(rejected)
    root = logging.getLogger()

    async def read_all() -> None:
        lines.extend([line async for line in stdin])

    root.addHandler(signal)
    try:
        with send, capture_logs(logging.INFO), anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(read_all)
                await rejected.wait()  # the first line is rejected before any writer exists
                stdin.answer_through(send)
                first = await receive.receive()
                receive.close()  # the server stops: the second answer has nowhere to go
    finally:
        root.removeHandler(signal)
    assert isinstance(first.message, JSONRPCError)
    assert (first.message.id, first.message.error.code) == (None, -32700)
    assert lines == [REQUEST + "\n"]


async def _read_lines(fd: int) -> tuple[list[str], list[str]]:
    """The lines ``StdinLines`` passes from ``fd``, and the names of the threads alive while it read."""
    send, receive = anyio.create_memory_object_stream[SessionMessage](10)
    threads: list[str] = []
    with send, receive, anyio.fail_after(30):
        stdin = StdinLines(fd)
        stdin.answer_through(send)
        lines = []
        async for line in stdin:
            lines.append(line)
            threads = [thread.name for thread in threading.enumerate()]
    return lines, threads


@pytest.mark.anyio
async def test_a_pipe_is_read_on_the_event_loop_without_a_reader_thread(pipe) -> None:
    """Platform choice: a pipe (how a host connects a stdio server) is waited on by the event loop, so a
    request reaches the SDK with no thread hand-off; a last line without a newline still counts."""
    read_end, write_end = pipe
    os.write(write_end, f"{REQUEST}\n{REQUEST}".encode())
    os.close(write_end)
    lines, threads = await _read_lines(read_end)
    assert lines == [REQUEST + "\n", REQUEST]
    assert "osbp-stdin" not in threads


@pytest.mark.anyio
async def test_a_regular_file_the_event_loop_cannot_wait_on_is_read_by_the_daemon_thread(tmp_path) -> None:
    """Platform choice: stdin redirected from a file (which no event loop can wait on) is read by the
    daemon thread, with the same lines in the same order."""
    requests = tmp_path / "requests.jsonl"
    requests.write_text(f"{REQUEST}\n\n{REQUEST}\n", encoding="utf-8")
    fd = os.open(requests, os.O_RDONLY)
    try:
        lines, threads = await _read_lines(fd)
    finally:
        os.close(fd)
    assert lines == [REQUEST + "\n", REQUEST + "\n"]
    assert "osbp-stdin" in threads


def _deep_request(request_id: int | str) -> str:
    """A tools/call whose arguments nest 100 000 arrays deep: past every JSON parser's limit."""
    return holding("[" * 100_000 + "]" * 100_000, id=request_id)


@pytest.fixture(scope="module")
def stdio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioServer]:
    """The real server as a stdio subprocess on pipes, as a host runs it (no tool call reaches a platform)."""
    workdir = tmp_path_factory.mktemp("stdio")
    env = {
        "OSBP_PLATFORM_BASE_URL": "http://127.0.0.1:9",  # never reached: no tool runs
        "OSBP_ORGANIZATION_ID": "carolyns_dental",
        "OSBP_STATE_PATH": str(workdir / "state.sqlite3"),
        "OSBP_AUDIT_LOG_PATH": str(workdir / "events.jsonl"),
    }
    with StdioServer(env) as server:
        yield server


@pytest.mark.integration
@pytest.mark.parametrize(
    ("line", "answers"),
    [
        (f"[{request(id=2)},{request(id='b')}]", [(2, -32600), ("b", -32600)]),
        (f"[{request(id=2)},{request(id=...)}]", [(2, -32600)]),
        ("[]", [(None, -32600)]),
        (_deep_request(4), [(4, -32700)]),
        (_deep_request("deep"), [("deep", -32700)]),
        ('{"params":' + '{"a":' * 100_000 + "1" + "}" * 100_000 + ',"id":5}', [(5, -32700)]),
        ("[" * 100_000 + "]" * 100_000, [(None, -32700)]),
    ],
)
def test_a_batch_or_deep_nesting_over_a_real_stdio_pipe_answers_each_request_id(
    stdio: StdioServer, line: str, answers: list[tuple[Any, int]]
) -> None:
    """JSON-RPC 2.0 §5 (the response's id is the request's), MCP 2025-06-18 (no batching): a host waits
    on its request ids, so each request of a refused batch, and a request nested past the parser's limit,
    is answered with its own id; only what has no readable id gets one error with id null."""
    written = stdio.exchange(line)
    assert [(answer["id"], answer["error"]["code"]) for answer in written] == answers
