"""The confirmation page of URL-mode confirmation: where the user confirms a booking outside the host.

Served by the Streamable HTTP app (:mod:`osbp.server.http`) at ``/confirm/<secret>``, on the server's own
origin (its resource URL's: loopback, or HTTPS when deployed). The secret is the page's single-use
capability, 256 random bits; the state store knows the page by the secret's hash only
(:mod:`osbp.protocol.confirmation_pages`), so every replica serves every page.

* ``GET`` shows the approval summary (HTML-escaped, the same text the token path shows) and two buttons.
  It changes nothing, so a link preview or a prefetch cannot confirm.
* ``POST`` (``application/x-www-form-urlencoded``: ``decision`` = ``confirm`` | ``decline``, and the
  ``summary_hash`` the page showed) records the answer once, before the page expires, for the summary it
  showed. Cross-site forgery needs the secret, which only the URL carries, and a browser's foreign
  ``Origin`` is refused by the app's allow-list before this runs.

Every answer is ``no-store``, ``no-referrer`` (the URL never leaks into another site's logs) and refuses
framing (no clickjacking of the confirm button). A browser holds no bearer token, so the page itself
cannot authenticate the user: whoever holds the URL can answer it. What binds the booking to the
authenticated subject is the redemption: the retry that books must come from the subject the page was
issued to (docs/server.md, "URL mode").
"""

from __future__ import annotations

import html
import logging
from dataclasses import dataclass
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from osbp.protocol.confirmation_pages import ConfirmationPages, PageAnswer

__all__ = ["PAGE_PATH", "ConfirmationSite"]

logger = logging.getLogger("osbp.server")

PAGE_PATH = "/confirm"
#: The largest answer a page accepts (two short fields).
_MAX_FORM_BYTES = 1024
_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
}
_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;line-height:1.5}"
)
#: Why a page cannot be answered, for the user, with its HTTP status.
_REFUSED: dict[PageAnswer, tuple[int, str]] = {
    "unknown": (404, "This confirmation link is not valid."),
    "expired": (410, "This confirmation link has expired. Nothing was booked; ask your assistant again."),
    "answered": (409, "This booking was already answered on this page. A confirmation link works once."),
    "other_summary": (409, "This page changed since it was shown. Reload it and answer again."),
}


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    document = (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><h1>{html.escape(title)}</h1>{body}</body></html>"
    )
    return HTMLResponse(document, status_code=status, headers=_HEADERS)


async def _bounded_body(request: Request) -> bytes | None:
    """The request body, or ``None`` once it passes :data:`_MAX_FORM_BYTES` (the rest is never read)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > _MAX_FORM_BYTES:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > _MAX_FORM_BYTES:
            return None
    return bytes(body)


def _refusal(why: PageAnswer) -> HTMLResponse:
    status, text = _REFUSED[why]
    return _page("Confirmation unavailable", f"<p>{html.escape(text)}</p>", status)


@dataclass(frozen=True, slots=True)
class ConfirmationSite:
    """The confirmation pages and the origin that serves them (``https://osbp.example``, no path)."""

    pages: ConfirmationPages
    origin: str

    def url(self, secret: str) -> str:
        """The page's URL: the only place its secret goes."""
        return f"{self.origin}{PAGE_PATH}/{secret}"

    def routes(self) -> list[Route]:
        """The page's route, for the HTTP app (outside bearer authorization: a browser has no token)."""
        return [Route(PAGE_PATH + "/{secret}", endpoint=self._endpoint, methods=["GET", "POST"])]

    async def _endpoint(self, request: Request) -> Response:
        secret = request.path_params["secret"]
        if request.method == "POST":
            return await self._answer(request, secret)
        view = await self.pages.view(secret)
        if view.refused is not None:
            return _refusal(view.refused)
        form = (
            f"<p>{html.escape(view.summary)}</p>"
            '<form method=post><input type=hidden name=summary_hash value="'
            f'{html.escape(view.summary_hash)}">'
            "<button name=decision value=confirm>Confirm and book</button> "
            "<button name=decision value=decline>Decline</button></form>"
            "<p>Nothing is booked until you confirm. This page works once and expires.</p>"
        )
        return _page("Confirm this booking", form)

    async def _answer(self, request: Request, secret: str) -> Response:
        if (
            request.headers.get("content-type", "").split(";")[0].strip()
            != "application/x-www-form-urlencoded"
        ):
            return _page("Confirmation unavailable", "<p>Answer with the page's own buttons.</p>", 415)
        body = await _bounded_body(request)
        if body is None:
            return _page("Confirmation unavailable", "<p>Answer with the page's own buttons.</p>", 413)
        fields = parse_qs(body.decode("utf-8", "replace"))
        decision = fields.get("decision", [""])[0]
        summary_hash = fields.get("summary_hash", [""])[0]
        if decision not in ("confirm", "decline"):
            return _page("Confirmation unavailable", "<p>Answer with the page's own buttons.</p>", 400)
        answered = await self.pages.answer(secret, decision == "confirm", summary_hash)
        logger.info("confirmation_page_answered", extra={"outcome": answered})
        if answered == "confirmed":
            return _page(
                "Confirmed", "<p>Thank you. Return to your assistant: it books this appointment now.</p>"
            )
        if answered == "declined":
            return _page("Declined", "<p>Nothing will be booked. You can close this page.</p>")
        return _refusal(answered)
