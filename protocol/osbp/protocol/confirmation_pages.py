"""The records behind URL-mode confirmation: one confirmation page per approval summary put to the user.

A page is issued for one booking.create: the caller's subject (its hash), the payload hash, the summary's
hash and text, and an expiry (the approval TTL). It is reached at a URL carrying a single-use secret of
256 random bits; the state store keeps only the secret's SHA-256
(:func:`~osbp.protocol.store.secret_hash`, as for approval tokens), so a copy of the store cannot open or
answer a page, and every replica on the store sees the same pages.

A page goes ``pending`` → ``confirmed`` or ``declined`` (the user's answer on the page, once, before it
expires) → ``used`` (the confirmed booking.create that redeemed it, once); the host's decline of the URL
declines it too, whatever the page held, unless it was used. Each step is one conditional
``UPDATE`` in one transaction, so of two answers, or two redemptions, exactly one wins. The summary text
is kept only while the page can still be shown; an answered page keeps its hashes only.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from osbp.protocol.clock import Clock
from osbp.protocol.state import StateBackend, StateConnection
from osbp.protocol.store import duration_micros, secret_hash, to_micros

__all__ = [
    "ConfirmationPages",
    "IssuedPage",
    "PageAnswer",
    "PageView",
    "Redemption",
]

#: What a redemption finds: ``confirmed`` (and now used), or why the booking must not proceed.
Redemption = Literal["confirmed", "pending", "declined", "expired", "used", "other_summary", "foreign"]
#: What an answer on the page did: recorded, or why it was refused.
PageAnswer = Literal["confirmed", "declined", "unknown", "expired", "answered", "other_summary"]


_SELECT_VIEW = "SELECT summary, summary_hash, state, expires_at FROM confirmation_pages WHERE page_hash = ?"
_SELECT_ANSWER = "SELECT summary_hash, state, expires_at FROM confirmation_pages WHERE page_hash = ?"
_SELECT_REDEEM = (
    "SELECT subject_hash, payload_hash, summary_hash, state, expires_at FROM confirmation_pages "
    "WHERE page_hash = ?"
)


@dataclass(frozen=True, slots=True)
class IssuedPage:
    """A new page: its ``secret`` (goes into the URL, nowhere else) and the ``key`` the store knows it by."""

    secret: str
    key: str


@dataclass(frozen=True, slots=True)
class PageView:
    """What a page shows: its summary and hash while it can be answered, else why not (``refused``)."""

    summary: str
    summary_hash: str
    refused: PageAnswer | None


class ConfirmationPages:
    """Issues, shows, answers and redeems confirmation pages in the shared OSBP state store."""

    def __init__(self, state: StateBackend, clock: Clock, ttl: timedelta) -> None:
        self._state = state
        self._clock = clock
        self._ttl_us = duration_micros(ttl)

    def _now(self) -> int:
        return to_micros(self._clock.now())

    async def issue(
        self, subject_hash: str, payload_hash: str, summary_hash: str, summary: str
    ) -> IssuedPage:
        """A new pending page for ``summary``, bound to the subject and the payload."""
        secret = secrets.token_urlsafe(32)
        key = secret_hash(secret)
        now = self._now()

        def insert() -> None:
            with self._state.write() as db:
                db.execute(
                    "INSERT INTO confirmation_pages (page_hash, subject_hash, payload_hash, summary_hash, "
                    "summary, state, issued_at, expires_at) VALUES (?, ?, ?, ?, ?, 'pending', ?, ?)",
                    (key, subject_hash, payload_hash, summary_hash, summary, now, now + self._ttl_us),
                )

        await self._state.run(insert)
        return IssuedPage(secret, key)

    async def view(self, secret: str) -> PageView:
        """The page at ``secret``: its summary if it can still be answered."""
        now = self._now()

        def read() -> PageView:
            with self._state.read() as db:
                row = db.execute(_SELECT_VIEW, (secret_hash(secret),)).fetchone()
            if row is None:
                return PageView("", "", "unknown")
            summary, summary_hash, state, expires_at = row
            refused = _unanswerable(state, expires_at, now)
            return PageView(summary if refused is None else "", summary_hash, refused)

        return await self._state.run(read)

    async def answer(self, secret: str, confirm: bool, summary_hash: str) -> PageAnswer:
        """Record the user's answer on the page, once, before it expires, for the summary it showed."""
        key = secret_hash(secret)
        now = self._now()
        decided = "confirmed" if confirm else "declined"

        def update() -> PageAnswer:
            with self._state.write() as db:
                row = db.execute(_SELECT_ANSWER + self._state.for_update, (key,)).fetchone()
                if row is None:
                    return "unknown"
                shown, state, expires_at = row
                refused = _unanswerable(state, expires_at, now)
                if refused is not None:
                    return refused
                if shown != summary_hash:
                    return "other_summary"
                db.execute(
                    "UPDATE confirmation_pages SET state = ?, summary = '', answered_at = ? "
                    "WHERE page_hash = ? AND state = 'pending'",
                    (decided, now, key),
                )
                return decided  # type: ignore[return-value]  # one of the two literals above

        return await self._state.run(update)

    async def redeem(self, key: str, subject_hash: str, payload_hash: str, summary_hash: str) -> Redemption:
        """Spend a page confirmed for this subject, payload and summary; else what it holds instead."""
        now = self._now()

        def spend(db: StateConnection) -> Redemption:
            row = db.execute(_SELECT_REDEEM + self._state.for_update, (key,)).fetchone()
            if row is None or row[0] != subject_hash or row[1] != payload_hash:
                return "foreign"
            _, _, confirmed_hash, state, expires_at = row
            if state in ("declined", "used"):
                return state  # type: ignore[no-any-return]  # the column's CHECK admits only these
            if expires_at <= now:
                return "expired"
            if state == "pending":
                return "pending"
            if confirmed_hash != summary_hash:
                return "other_summary"
            db.execute(
                "UPDATE confirmation_pages SET state = 'used' WHERE page_hash = ? AND state = 'confirmed'",
                (key,),
            )
            return "confirmed"

        def redeem() -> Redemption:
            with self._state.write() as db:
                return spend(db)

        return await self._state.run(redeem)

    async def decline(self, key: str, subject_hash: str, payload_hash: str) -> None:
        """The host declined (or dismissed) opening this page: it is declined now, never confirmable."""
        now = self._now()

        def update() -> None:
            with self._state.write() as db:
                db.execute(
                    "UPDATE confirmation_pages SET state = 'declined', summary = '', answered_at = ? "
                    "WHERE page_hash = ? AND subject_hash = ? AND payload_hash = ? "
                    "AND state IN ('pending', 'confirmed')",
                    (now, key, subject_hash, payload_hash),
                )

        await self._state.run(update)


def _unanswerable(state: str, expires_at: int, now: int) -> PageAnswer | None:
    if state != "pending":
        return "answered"
    if expires_at <= now:
        return "expired"
    return None
