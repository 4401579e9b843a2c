"""The server's stdout pipe: messages written on the event loop, whole and in order, the wire restored."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time

import pytest

from osbp.server.stdout import StdoutPipe, claimed_stdout

pytestmark = pytest.mark.anyio


def test_a_message_the_pipe_has_room_for_is_written_without_leaving_the_event_loop() -> None:
    """Platform choice: an answer costs no worker-thread hand-off (the coroutine completes in one step)."""
    read, write = os.pipe()
    try:
        os.set_blocking(write, False)
        step = StdoutPipe(write).write('{"jsonrpc":"2.0","id":1,"result":{}}\n')
        with pytest.raises(StopIteration) as done:
            step.send(None)  # never suspends: nothing was handed to a thread or waited for
        assert done.value.value == 37
        assert os.read(read, 100) == b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
    finally:
        os.close(read)
        os.close(write)


@pytest.mark.parametrize("kind", ["pipe", "socket"])
async def test_a_message_larger_than_the_pipe_is_written_whole_and_in_order_while_the_host_reads_slowly(
    kind: str,
) -> None:
    """MCP stdio transport: every message is one whole line, however slowly the host reads."""
    if kind == "pipe":
        read, write = os.pipe()
    else:
        ends = socket.socketpair()
        read, write = (end.detach() for end in ends)
    message = "".join(f"{index:07d}," for index in range(40_000)) + "é\n"  # 320 KB, past a 64 KB pipe
    received = bytearray()

    def host() -> None:
        while chunk := os.read(read, 4096):
            received.extend(chunk)
            time.sleep(0.0005)

    reader = threading.Thread(target=host)
    reader.start()
    try:
        with claimed_stdout(write) as pipe:
            assert pipe is not None
            await pipe.write(message)
            await pipe.write("second\n")
            await pipe.flush()
    finally:
        os.close(write)
        reader.join(timeout=30)
        os.close(read)
    assert bytes(received) == (message + "second\n").encode("utf-8")


def test_while_claimed_the_descriptor_points_at_stderr_and_afterwards_at_the_wire_again_blocking() -> None:
    """MCP stdio transport: stray output never reaches the wire; the descriptor is handed back as it was."""
    read, write = os.pipe()
    try:
        with claimed_stdout(write) as pipe:
            assert pipe is not None
            assert os.fstat(write).st_ino == os.fstat(2).st_ino  # a stray write goes to stderr
        os.write(write, b"after\n")
        assert os.read(read, 100) == b"after\n"
        assert os.get_blocking(write)
    finally:
        os.close(read)
        os.close(write)


def test_a_descriptor_that_is_not_a_pipe_is_left_to_the_sdk() -> None:
    """Platform choice: a terminal or a file keeps the SDK's own writer (never made non-blocking here)."""
    with tempfile.TemporaryFile() as file:
        before = os.fstat(file.fileno()).st_ino
        with claimed_stdout(file.fileno()) as pipe:
            assert pipe is None
            assert os.fstat(file.fileno()).st_ino == before
        assert os.get_blocking(file.fileno())
