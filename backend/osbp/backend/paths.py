"""Path segments the platform refuses before routing: an encoded slash or a dot segment.

The ASGI server percent-decodes the path before the router sees it, so a segment sent as ``a%2Fb`` would
route as two segments, and a ``..`` (or ``%2e%2e``) segment would fill a ``{param}`` with a dot segment
that names a parent in every other URL reading. Neither names any resource of this API, so a request
whose raw path has such a segment is answered 404 ``not_found`` (problem+json) without reaching a route.
Every other request passes through untouched.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from starlette.types import ASGIApp, Receive, Scope, Send

from osbp.backend.problems import Problem, problem_response

__all__ = ["PathSegments", "refused_segment"]

_DOT_SEGMENTS = (b".", b"..")


def refused_segment(raw_path: bytes) -> bool:
    """True when a segment of ``raw_path`` decodes to something holding ``/`` or to a dot segment."""
    for segment in raw_path.split(b"/"):
        decoded = unquote_to_bytes(segment)
        if b"/" in decoded or decoded in _DOT_SEGMENTS:
            return True
    return False


class PathSegments:
    """An ASGI layer refusing paths with encoded slashes or dot segments (inside the platform edge)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer 404 ``not_found`` for a refused path; pass everything else on."""
        if scope["type"] == "http":
            raw = scope.get("raw_path") or scope.get("path", "").encode()
            if refused_segment(raw.split(b"?", 1)[0]):
                problem = Problem(
                    "not_found",
                    "No such path: a path segment may not hold an encoded '/' or be '.' or '..'.",
                )
                await problem_response(problem)(scope, receive, send)
                return
        await self.app(scope, receive, send)
