"""`Idempotency-Key` handling for appointment creates, and the customer's cancel and reschedule (IETF
httpapi idempotency-key draft semantics).

Keys are scoped per organization, shared by the three operations (the fingerprint names the operation), and
kept 24 hours on the platform clock. The key's check and the create (or change) run in ONE write
transaction (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: after an advisory lock on the key,
so duplicates on several processes queue too; see `appointments.create`), so a process killed at any
moment leaves either nothing (the key is free, the retry creates) or the appointment together with its
stored response (the retry replays the 201): never a key stuck "in flight". A concurrent duplicate waits
for the write lock and then replays. Only a success (201, or a change's 200) is stored; a refusal stores
nothing, so the client can retry the same key with a corrected request (for example adding the
verification code after a 428). A record left `in_flight` by an older version of the platform never
committed its create and is treated as absent.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Table, bindparam, delete, insert, select
from sqlmodel import Session

from osbp.backend.models import IdempotencyRecord
from osbp.backend.problems import ProblemError

__all__ = ["RETENTION_SECONDS", "Replay", "fingerprint", "lookup", "parse_key", "store"]

RETENTION_SECONDS = 24 * 3600

#: One key's row, read and written with statements built once (SQLAlchemy Core, values bound per call).
_RECORDS: Table = IdempotencyRecord.__table__  # type: ignore[attr-defined]
_THE_KEY = (
    _RECORDS.c.organization_id == bindparam("organization_id"),
    _RECORDS.c.key == bindparam("key"),
)
_LOOKUP = select(
    *(_RECORDS.c[name] for name in ("created_utc", "state", "fingerprint", "status_code", "response_body"))
).where(*_THE_KEY)
_FORGET = delete(_RECORDS).where(*_THE_KEY)
_STORE = insert(_RECORDS)


@dataclass(frozen=True)
class Replay:
    """The key already completed with this body: send the stored response again."""

    status_code: int
    body: dict[str, Any]


def parse_key(header: str | None) -> str:
    """The key from the header (an RFC 8941 quoted string is unquoted), or 400 `idempotency_key_missing`."""
    if header is None:
        raise ProblemError("idempotency_key_missing", "This request requires an Idempotency-Key header.")
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


def lookup(session: Session, *, organization_id: str, key: str, digest: str, now: datetime) -> Replay | None:
    """The stored response to replay for this key, or ``None`` to create; a mismatch is refused (422).

    Runs inside the create's own write transaction. An expired record or an ``in_flight`` leftover (from a
    platform version that claimed keys in a separate transaction) is deleted: its create never committed.
    """
    connection = session.connection()
    record_key = {"organization_id": organization_id, "key": key}
    record = connection.execute(_LOOKUP, record_key).first()
    epoch = int(now.timestamp())
    if record is not None and (
        record.created_utc <= epoch - RETENTION_SECONDS or record.state != "completed"
    ):
        connection.execute(_FORGET, record_key)
        record = None
    if record is None:
        return None
    if record.fingerprint != digest:
        raise ProblemError(
            "idempotency_key_reused", "This Idempotency-Key was already used with a different request body."
        )
    return Replay(record.status_code or 201, json.loads(record.response_body or "{}"))


def store(
    session: Session,
    *,
    organization_id: str,
    key: str,
    digest: str,
    now: datetime,
    status_code: int,
    body: dict[str, Any],
) -> None:
    """Record the completed response for replay, in the transaction that created the appointment."""
    record = {
        "organization_id": organization_id,
        "key": key,
        "fingerprint": digest,
        "state": "completed",
        "created_utc": int(now.timestamp()),
        "status_code": status_code,
        "response_body": json.dumps(body, separators=(",", ":")),
    }
    session.connection().execute(_STORE, record)
