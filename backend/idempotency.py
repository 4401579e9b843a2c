"""`Idempotency-Key` handling for appointment creates (IETF httpapi idempotency-key draft semantics).

Keys are scoped per organization and kept 24 hours on the platform clock. A key is claimed (in flight)
in its own short transaction before the create runs, so a concurrent duplicate sees it and gets 409.
Only a successful create (201) is stored for replay; any refusal releases the key so the client can
retry the same key with a corrected request (for example adding the verification code after a 428).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlmodel import Session

from osbp.backend.models import IdempotencyRecord
from osbp.backend.problems import ProblemError

__all__ = ["RETENTION_SECONDS", "Claimed", "Replay", "claim", "fingerprint", "parse_key", "release", "store"]

RETENTION_SECONDS = 24 * 3600


@dataclass(frozen=True)
class Claimed:
    """The key is ours: run the create."""


@dataclass(frozen=True)
class Replay:
    """The key already completed with this body: send the stored response again."""

    status_code: int
    body: dict[str, Any]


def parse_key(header: str | None) -> str:
    """The key from the header (an RFC 8941 quoted string is unquoted), or 400 `idempotency_key_missing`."""
    if header is None:
        raise ProblemError(
            "idempotency_key_missing", "Appointment creates require an Idempotency-Key header."
        )
    value = header.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    if not 1 <= len(value) <= 255 or not all(33 <= ord(char) <= 126 for char in value):
        raise ProblemError(
            "idempotency_key_missing", "Idempotency-Key must be 1-255 visible ASCII characters."
        )
    return value


def fingerprint(payload: dict[str, Any]) -> str:
    """A stable digest of a request body (keys sorted, compact)."""
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def claim(
    session: Session, *, organization_id: str, key: str, digest: str, now: datetime
) -> Claimed | Replay:
    """Claim the key for this request or report a replay; refuse a mismatch (422) or an in-flight twin (409).

    A refusal writes nothing, so its transaction has nothing to keep.
    """
    record = session.get(IdempotencyRecord, (organization_id, key))
    epoch = int(now.timestamp())
    if record is not None and record.created_utc <= epoch - RETENTION_SECONDS:
        session.delete(record)
        session.flush()
        record = None
    if record is None:
        session.add(
            IdempotencyRecord(
                organization_id=organization_id,
                key=key,
                fingerprint=digest,
                state="in_flight",
                created_utc=epoch,
            )
        )
        return Claimed()
    if record.fingerprint != digest:
        raise ProblemError(
            "idempotency_key_reused", "This Idempotency-Key was already used with a different request body."
        )
    if record.state == "in_flight":
        raise ProblemError(
            "idempotency_key_in_use",
            "A request with this Idempotency-Key is still being processed; retry shortly.",
            headers={"Retry-After": "1"},
        )
    return Replay(record.status_code or 201, json.loads(record.response_body or "{}"))


def store(
    session: Session, *, organization_id: str, key: str, status_code: int, body: dict[str, Any]
) -> None:
    """Record the completed response for replay."""
    record = session.get(IdempotencyRecord, (organization_id, key))
    if record is not None:
        record.state = "completed"
        record.status_code = status_code
        record.response_body = json.dumps(body, separators=(",", ":"))
        session.add(record)


def release(session: Session, *, organization_id: str, key: str) -> None:
    """Forget an in-flight claim (the create was refused or failed)."""
    record = session.get(IdempotencyRecord, (organization_id, key))
    if record is not None and record.state == "in_flight":
        session.delete(record)
