"""The HTTP/1.1 protocol the platform serves with: uvicorn's h11 protocol, answering in problem+json.

uvicorn answers a request it cannot parse (h11 `RemoteProtocolError`: a malformed request line, an invalid
header, a header section over `h11_max_incomplete_event_size`, broken chunked framing, a non-HTTP preface)
itself, before the application sees anything, with a `text/plain` 400. The platform promises
problem+json for every error, so `problem_protocol` makes the same 400 an `invalid_request` problem with
the platform's `Server` and `X-Request-Id` headers; the connection still closes, as h11 requires after a
protocol error. uvicorn does not say which rule broke, so the detail is one fixed sentence.

A parse error after the application has begun its response (a chunked body that breaks off mid-way, under
a route that answered before reading it) cannot get a second status line: the connection is closed, the
client sees a truncated response, exactly as with uvicorn's own protocol.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from osbp.backend.headers import PLATFORM_SERVER, REQUEST_ID_HEADER
from osbp.backend.logs import current_request_id
from osbp.backend.problems import PROBLEM_MEDIA_TYPE, Problem

__all__ = ["MALFORMED_DETAIL", "problem_protocol"]

MALFORMED_DETAIL = (
    "The request is not valid HTTP/1.1 (request line, header fields, header size or message framing); "
    "the connection is closed."
)


def problem_protocol(request_id: Callable[[], str]) -> type[H11Protocol]:
    """An `H11Protocol` subclass whose parse-error 400 is problem+json, request ids from `request_id`."""

    class ProblemH11Protocol(H11Protocol):
        """uvicorn's h11 protocol with a problem+json answer to a request it cannot parse."""

        def send_400_response(self, msg: str) -> None:
            """Answer a malformed request with an `invalid_request` problem and close the connection."""
            if self.conn.our_state not in {h11.IDLE, h11.SEND_RESPONSE}:
                # A response is already under way: no second status line is possible.
                self.transport.close()
                return
            rid = request_id()
            token = current_request_id.set(rid)
            try:
                body = json.dumps(Problem("invalid_request", MALFORMED_DETAIL).body(), separators=(",", ":"))
            finally:
                current_request_id.reset(token)
            content = body.encode()
            headers = [
                (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
                (b"content-length", str(len(content)).encode()),
                (b"server", PLATFORM_SERVER.encode()),
                (REQUEST_ID_HEADER.lower().encode(), rid.encode()),
                (b"connection", b"close"),
            ]
            for event in (
                h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                h11.Data(data=content),
                h11.EndOfMessage(),
            ):
                self.transport.write(self.conn.send(event) or b"")
            self.transport.close()

    return ProblemH11Protocol
