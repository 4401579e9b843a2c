"""The answered rounds of a multi-round confirmation: a round the user declined stays declined.

A 2026-07-28 ``input_required`` round is stateless on the server: its request state (sealed by the MCP
SDK) travels with the client, which can echo it again. The seal stops forgery, not a second answer: a
client holding a round's state could answer it "decline", then "accept". So each round the server asks
carries a random round id in its sealed state, and the first answer that reaches the server is recorded
here, in the shared state store (every replica sees it), by the id's hash:

* a decline or a cancel records the round ``declined``, whatever it held before; no later answer to that
  round confirms anything;
* an accept records the round ``accepted`` only if nothing was recorded for it yet, and confirms only if
  the round is ``accepted`` after that (a round already declined stays declined).

A record outlives the round's request state (``expires_at`` is the answer's time plus the state's
lifetime), so no echo of the state can find it gone; the purge (:mod:`osbp.protocol.retention`) deletes it
after that.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Literal

from osbp.protocol.clock import Clock
from osbp.protocol.state import StateBackend
from osbp.protocol.store import duration_micros, secret_hash, to_micros

__all__ = ["ConfirmationRounds", "RoundAnswer", "new_round_id"]

#: What a round stands at after an answer: accepted, or declined (a cancel counts as a decline).
RoundAnswer = Literal["accepted", "declined"]


def new_round_id() -> str:
    """A fresh round id (128 random bits): carried in the round's sealed request state only."""
    return secrets.token_urlsafe(16)


class ConfirmationRounds:
    """Records the answers to confirmation rounds in the shared OSBP state store."""

    def __init__(self, state: StateBackend, clock: Clock, ttl: timedelta) -> None:
        self._state = state
        self._clock = clock
        #: How long a round's request state can be echoed (its seal's lifetime).
        self._ttl_us = duration_micros(ttl)

    async def answer(self, round_id: str, payload_hash: str, answer: RoundAnswer) -> RoundAnswer:
        """Record ``answer`` (a decline always, an accept only as the first); what the round holds now."""
        key = secret_hash(round_id)
        now = to_micros(self._clock.now())
        expires = now + self._ttl_us

        def record() -> RoundAnswer:
            with self._state.write() as db:
                if answer == "declined":
                    db.execute(
                        "INSERT INTO confirmation_rounds (round_hash, payload_hash, answer, answered_at, "
                        "expires_at) VALUES (?, ?, 'declined', ?, ?) ON CONFLICT (round_hash) DO UPDATE "
                        "SET answer = 'declined', answered_at = excluded.answered_at, "
                        "expires_at = excluded.expires_at",
                        (key, payload_hash, now, expires),
                    )
                    return "declined"
                db.execute(
                    "INSERT INTO confirmation_rounds (round_hash, payload_hash, answer, answered_at, "
                    "expires_at) VALUES (?, ?, 'accepted', ?, ?) ON CONFLICT (round_hash) DO NOTHING",
                    (key, payload_hash, now, expires),
                )
                row = db.execute(
                    "SELECT answer, payload_hash FROM confirmation_rounds WHERE round_hash = ?", (key,)
                ).fetchone()
            # A round is one payload's (its sealed state says so); any other record confirms nothing.
            if row is None or row[1] != payload_hash:
                return "declined"
            standing: RoundAnswer = "accepted" if row[0] == "accepted" else "declined"
            return standing

        return await self._state.run(record)

    async def standing(self, round_id: str, payload_hash: str) -> RoundAnswer | None:
        """What the round holds (``None``: no answer recorded), for a later round that follows from it."""
        key = secret_hash(round_id)

        def read() -> RoundAnswer | None:
            with self._state.read() as db:
                row = db.execute(
                    "SELECT answer, payload_hash FROM confirmation_rounds WHERE round_hash = ?", (key,)
                ).fetchone()
            if row is None:
                return None
            return "accepted" if row[0] == "accepted" and row[1] == payload_hash else "declined"

        return await self._state.run(read)
