"""The server's stdin: lines the MCP SDK reads pass through in order; every other line is answered."""

from __future__ import annotations

import contextlib
import json
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
from osbp.server.stdin import Rejection, StdinLines, screen
from tests.support.logs import capture_logs, events, fields

REQUEST = '{"jsonrpc":"2.0","id":7,"method":"tools/list"}'
SECRET = "zelda.sentinel@example.org"


def request(**members: Any) -> str:
    """A JSON-RPC request line with ``members`` replaced (a member given as ``...`` is left out)."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x"}}
    body |= members
    return json.dumps({key: value for key, value in body.items() if value is not ...})


def holding(raw: str, **members: Any) -> str:
    """A request whose ``params.text`` is the raw JSON text ``raw`` (an escape json.dumps would not write)."""
    return request(params={"text": "HOLE"}, **members).replace('"HOLE"', raw)


#: A cut emoji from a JavaScript host: the high half of U+1F600 alone.
LONE = holding('"\\udfff"')


@pytest.mark.parametrize(
    "line",
    [
        REQUEST,
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        '{"jsonrpc":"2.0","id":1,"result":{}}',
        '{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}',
        holding('"\\ud83d\\ude00"'),  # a paired escape: one emoji
        "\n",
    ],
)
def test_a_line_the_sdk_reads_is_not_rejected(line: str) -> None:
    """JSON-RPC 2.0 §4, §5: valid requests, notifications and responses pass through untouched."""
    assert screen(line) is None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("garbage", Rejection(-32700, "not_json", None)),
        ('{"jsonrpc":"2.0","id":7,', Rejection(-32700, "not_json", None)),
        (holding("Infinityish"), Rejection(-32700, "not_json", None)),
        (LONE, Rejection(-32700, "lone_surrogate", 7)),
        (holding('"\\ud800"', id="HOLE"), Rejection(-32700, "lone_surrogate", None)),
        (holding("[" * 300 + "]" * 300), Rejection(-32700, "too_deep", 7)),
        ("[" * 100_000 + "]" * 100_000, Rejection(-32700, "too_deep", None)),
        ("{}", Rejection(-32600, "not_a_request", None)),
        ("[]", Rejection(-32600, "batch", None)),
        (f"[{REQUEST},{REQUEST}]", Rejection(-32600, "batch", None)),
        ("42", Rejection(-32600, "not_a_request", None)),
        (request(params="x"), Rejection(-32600, "not_a_request", 7)),
        (request(jsonrpc="1.0"), Rejection(-32600, "not_a_request", 7)),
        (request(jsonrpc=...), Rejection(-32600, "not_a_request", 7)),
        (request(id="req-1", method=3), Rejection(-32600, "not_a_request", "req-1")),
        (request(id=True, params="x"), Rejection(-32600, "not_a_request", None)),
        (request(id=1.5, params="x"), Rejection(-32600, "not_a_request", None)),
        (request(id={"a": 1}, params="x"), Rejection(-32600, "not_a_request", None)),
        ('{"jsonrpc":"2.0","id":7,"result":"x"}', Rejection(-32600, "not_a_request", None)),
        (request(id=..., params="x"), Rejection(-32600, "not_a_request", None)),
        (request(id=..., method=1), Rejection(-32600, "not_a_request", None)),
        (request(id=..., params=[1]), Rejection(-32600, "not_a_request", None, answered=False)),
    ],
)
def test_a_line_the_sdk_cannot_read_gets_its_code_and_id(line: str, expected: Rejection) -> None:
    """JSON-RPC 2.0 §5.1: -32700 for text that is not (I-)JSON, -32600 for JSON that is no request;
    the id when it can be read, else null; a valid notification (§4.1) is never answered."""
    assert screen(line) == expected


def test_the_error_response_is_json_rpc_2_0_with_the_standard_message() -> None:
    """JSON-RPC 2.0 §5.1: the code's standard message, and "id" present even when null."""
    wire = json.loads(
        Rejection(-32700, "not_json", None).response().model_dump_json(by_alias=True, exclude_unset=True)
    )
    assert wire == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error: the line is not JSON"},
    }
    invalid = Rejection(-32600, "batch", "a").response()
    assert (invalid.id, invalid.error.code) == ("a", -32600)
    assert invalid.error.message.startswith("Invalid Request: ")


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
