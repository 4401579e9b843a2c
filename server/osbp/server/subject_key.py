"""The deployment's subject salt: what a remote subject's hash in the OSBP state is keyed with.

32 random bytes made once, by the first server to need them, and kept in the OSBP state itself (one row of
its own table, ``deployment_secrets``): private like the rest of the state (the SQLite file is ``0600``),
the same after a restart and for every replica sharing the state, and independent of ``OSBP_AUDIT_KEY``,
so a subject's idempotency scope and the approvals bound to it survive a change of the audit key. Servers
starting together agree too: the row is inserted only when absent and then read back, in one transaction.
"""

from __future__ import annotations

import secrets

from osbp.protocol.state import StateBackend

__all__ = ["deployment_salt"]

_TABLE = "CREATE TABLE IF NOT EXISTS deployment_secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL)"
_NAME = "subject_salt"


def _salt(state: StateBackend) -> bytes:
    with state.write() as db:
        db.execute(_TABLE)
        db.execute(
            "INSERT INTO deployment_secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
            (_NAME, secrets.token_hex(32)),
        )
        row = db.execute("SELECT value FROM deployment_secrets WHERE name = ?", (_NAME,)).fetchone()
    return bytes.fromhex(row[0])


def deployment_salt(state: StateBackend) -> bytes:
    """The deployment's subject salt, made and kept in ``state`` by the first caller."""
    try:
        return _salt(state)
    except Exception:
        # Two replicas creating the table at once can collide in PostgreSQL's catalog; the table exists
        # now, so the second try only reads (or inserts) the row. A real failure raises again here.
        return _salt(state)
