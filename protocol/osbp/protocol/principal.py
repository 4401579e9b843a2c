"""Who a call acts for: the authenticated principal of a remote (OAuth) call, or nobody on stdio.

A remote server knows, for each call, the bearer token's subject and the organizations the token may act
for. The server sets them around one call with :func:`acting_for`; the protocol core reads them where a
rule depends on them:

* the approval gate binds a challenge to the subject (:func:`subject_binding`): a token issued to one
  subject cannot be redeemed by another;
* the server's organization routing refuses ids of organizations the principal may not act for;
* booking.create's idempotency records live in the caller's scope (:func:`scope_of`: the organization
  and the subject), so a key one subject used is unknown to another, and its platform create carries a
  key derived from the subject's (:func:`platform_key`), so two subjects' attempts never meet there.

Who the subject is travels only as :attr:`Principal.subject_hash`, keyed: HMAC-SHA256 under the key the
server gives the principal (:meth:`Principal.keyed`: its audit key, else its deployment's salt), so an
identifier that can be guessed, such as an email address, cannot be recovered by hashing guesses.

Outside :func:`acting_for` (stdio, in-process tests) there is no principal: the scope is the organization
and the one local caller (:data:`LOCAL_SUBJECT`: whoever holds the process's stdin; stdio has no token to
tell users apart, and a stdio server serves the one user of its host), the platform key is the OSBP key
itself, and every other rule behaves exactly as it did before remote serving existed.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

from osbp.protocol.canonical import canonical_json, sha256_hex

__all__ = [
    "LOCAL_SUBJECT",
    "Principal",
    "acting_for",
    "current_principal",
    "platform_key",
    "scope_of",
    "subject_binding",
]

#: The subject of every call without a principal (stdio): the one local user at the other end of the pipe.
LOCAL_SUBJECT = "local"


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller: the token's issuer and subject, and the organizations it may act for."""

    issuer: str
    subject: str
    #: ``None``: any organization this server serves (a token without an organization restriction).
    organizations: frozenset[str] | None
    #: The secret :attr:`subject_hash` is keyed with (never shown, never compared).
    key: bytes | None = field(default=None, repr=False, compare=False)

    def may_act_for(self, organization_id: str) -> bool:
        """Whether the token allows acting for ``organization_id``."""
        return self.organizations is None or organization_id in self.organizations

    def keyed(self, key: bytes) -> Principal:
        """This principal with its :attr:`subject_hash` keyed under ``key``."""
        return replace(self, key=key)

    @property
    def subject_hash(self) -> str:
        """Who acted, stable per person but not the identifier itself (scopes, bindings, pages).

        HMAC-SHA256 hex under :attr:`key` of the canonical JSON of issuer and subject; a principal no key
        was given to (in-process use without a server) falls back to their plain SHA-256.
        """
        if self.key is None:
            return sha256_hex(self._identity())
        return self.hash_under(self.key)

    def hash_under(self, key: bytes) -> str:
        """HMAC-SHA256 hex under ``key`` of the canonical JSON of issuer and subject."""
        return hmac.new(key, canonical_json(self._identity()), hashlib.sha256).hexdigest()

    def _identity(self) -> dict[str, str]:
        return {"iss": self.issuer, "sub": self.subject}


_current: ContextVar[Principal | None] = ContextVar("osbp_principal", default=None)


def current_principal() -> Principal | None:
    """The principal of the call being served, or ``None`` (stdio, tests, no authorization)."""
    return _current.get()


@contextmanager
def acting_for(principal: Principal | None) -> Iterator[None]:
    """Serve the enclosed call for ``principal`` (``None``: no principal, as on stdio)."""
    token = _current.set(principal)
    try:
        yield
    finally:
        _current.reset(token)


def subject_binding(payload_hash: str) -> str:
    """What an approval binds for this payload: the payload hash alone without a principal, else both.

    Without a principal the value is the payload hash unchanged, so stdio approvals are exactly as before.
    """
    principal = _current.get()
    if principal is None:
        return payload_hash
    return sha256_hex({"payload_hash": payload_hash, "subject": principal.subject_hash})


def scope_of(organization_id: str) -> str:
    """The idempotency scope of a call for ``organization_id``: the organization and the caller.

    The caller is the principal's :attr:`~Principal.subject_hash` (never the identifier itself), or
    :data:`LOCAL_SUBJECT` without one. Never ``''``, the scope of records from before scopes existed.
    """
    principal = _current.get()
    subject = principal.subject_hash if principal is not None else LOCAL_SUBJECT
    return f"{organization_id}|{subject}"


def platform_key(idempotency_key: str) -> str | None:
    """The key a platform create is idempotent per, when it is not the OSBP key itself (``None``: it is).

    With a principal, derived from the key and the subject, so a second subject's attempt under the same
    key is a second logical create at the platform too, never a replay of the first subject's booking.
    Without one (stdio) the OSBP key, unchanged from before subjects were scoped.
    """
    principal = _current.get()
    if principal is None:
        return None
    return "osbp-" + sha256_hex({"idempotency_key": idempotency_key, "subject": principal.subject_hash})[:48]
