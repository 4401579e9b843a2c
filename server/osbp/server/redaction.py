"""The one redactor: what may leave a tool call for the audit log (and for published traces).

Redaction is by explicit **allowlist**: a value survives only under a key this module names (or, for a
context-dependent key such as ``code``, under a named parent), so a field nobody thought about is
redacted, not leaked. Every surviving string is then scrubbed as free text:

* approval tokens in the spec's retry instruction ``approval.token="<token>"`` (the token is redacted,
  the marker stays so a reader still sees that a challenge was issued);
* email addresses and phone numbers, found as :mod:`osbp.protocol.contact_shapes` finds them (the
  project's one definition of contact-shaped: RFC 6531 addresses, numbers with a "+" or of ten digits and
  more in any region, shorter ones by the phonenumbers matcher for the regions it names);
* every *known* sensitive string, wherever it reappears: the values the allowlist removed from the
  structured input (customer names and contacts, verification codes, approval tokens), the parts of a
  customer's name, and the tokens found in challenge messages.

Not on the allowlist, so always redacted: ``display_name``, ``given_name``, ``family_name``, ``phone``,
``email``, ``provider_image_url``, ``token``, ``verification_code`` and ``code`` (except
``problem.code``, the Problem code). The redactor is pure and deterministic: the same snapshot and known
strings always give the same output, so audit hashes are stable.

Typical use (the audit log and the trace recorder do exactly this)::

    redactor = Redactor()
    known = redactor.discover(tool_input, tool_result)
    safe_input = redactor.redact(tool_input, known)
    safe_result = redactor.redact(tool_result, known)

When several snapshots share one set of known strings (the audit log redacts input, result, mandate and
upstream metadata of one call), ``redactor.prepare(known)`` builds the known-strings pattern once and
remembers each distinct string's scrubbed form: a slot list repeats the same names, addresses, hours and
prices dozens of times, and scrubbing is a pure function of the string, so the output is identical.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import phonenumbers

from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN
from osbp.protocol.contact_shapes import PHONE_REGIONS, redact_contacts

__all__ = [
    "ALLOWED_KEYS",
    "ALLOWED_PATHS",
    "REDACTED",
    "Redactor",
    "Scrubber",
]

#: What a redacted value (or substring) is replaced with.
REDACTED = "[redacted]"

#: Keys whose values may be kept (strings still go through the free-text scrubber). Wire names of the
#: OSBP objects and envelopes, minus every customer, image, code and token field.
ALLOWED_KEYS: frozenset[str] = frozenset(
    {
        # envelope and Problem
        "ok", "value", "problem", "message", "retryable", "audit_event_id", "osbp_runtime", "idempotency",
        # BookingMandate and Money
        "mandate", "mandate_id", "expires_at", "allowed_actions", "organization_id", "service_ids",
        "provider_ids", "schedule_ids", "earliest_start", "latest_end", "max_price", "allow_policy_fee",
        "max_extra_fee", "amount_minor", "currency", "type", "display",
        # tool inputs (flat arguments); the customer object is kept but only its `id` survives inside
        "idempotency_key", "service_id", "schedule_id", "provider_id", "date", "time", "customer",
        "approval", "confirmed", "booking_id", "purpose", "reason",
        # Service, Slot, Policy, Booking, Receipt, VerificationChallenge, HandoffResult
        "id", "name", "description", "duration", "price", "requires_consultation", "options",
        "organization", "organization_name", "schedule_name", "schedule_address", "schedule_latitude",
        "schedule_longitude", "schedule_hours", "day", "open", "close", "schedule_timezone", "provider_name",
        "starts_at", "ends_at", "starts_at_local", "ends_at_local", "cancellation_enabled",
        "cancellation_window", "cancellation_note", "late_grace", "cancellation_fee", "no_show_fee",
        "payment_requirement", "deposit", "verification_method", "timezone", "country", "status", "text",
        "sent", "verified", "method",
    }
)  # fmt: skip

#: Context-dependent keys, as (parent key, key): ``code`` is a Problem code under ``problem`` but a raw
#: verification code at the top of a verification.verify input.
ALLOWED_PATHS: frozenset[tuple[str, str]] = frozenset({("problem", "code")})

_TOKEN_PREFIX = 'approval.token="'  # noqa: S105  not a secret: the literal start of every token match
_TOKEN_MARKER = _TOKEN_PREFIX + REDACTED + '"'
_NAME_KEYS = frozenset({"display_name", "given_name", "family_name"})


def _known_pattern(known: Iterable[str], min_length: int) -> re.Pattern[str] | None:
    strings = sorted({s for s in known if len(s) >= min_length and s != REDACTED}, key=len, reverse=True)
    if not strings:
        return None
    # Alphanumeric boundaries: a known "Al" must not eat the "Al" of "Always", but "_123456" still matches.
    alternation = "|".join(re.escape(s) for s in strings)
    return re.compile(rf"(?<![A-Za-z0-9])(?:{alternation})(?![A-Za-z0-9])")


class Scrubber:
    """One call's redaction: the known-strings pattern compiled once, each distinct string scrubbed once."""

    def __init__(self, redactor: Redactor, pattern: re.Pattern[str] | None) -> None:
        self._redactor = redactor
        self._pattern = pattern
        self._scrubbed: dict[str, str] = {}

    def redact(self, value: Any) -> Any:
        """A redacted deep copy of ``value``, as :meth:`Redactor.redact` with these known strings."""
        return self._redact(value, "")

    def scrub_text(self, text: str) -> str:
        """``text`` scrubbed (the same as :meth:`Redactor.scrub_text` with these known strings)."""
        done = self._scrubbed.get(text)
        if done is None:
            done = self._scrubbed[text] = _scrub(text, self._pattern, self._redactor.regions)
        return done

    def _redact(self, node: Any, parent: str) -> Any:
        # Checked in order of frequency: most nodes of a snapshot are strings, then plain dicts.
        if isinstance(node, str):
            done = self._scrubbed.get(node)
            if done is None:
                done = self._scrubbed[node] = _scrub(node, self._pattern, self._redactor.regions)
            return done
        if isinstance(node, dict | Mapping):
            allows = self._redactor.allows
            kept: dict[str, Any] = {}
            for key, value in node.items():
                name = str(key)
                kept[name] = self._redact(value, name) if allows(parent, name) else REDACTED
            return kept
        if isinstance(node, list):
            return [self._redact(item, parent) for item in node]
        return node


class Redactor:
    """Allowlist redaction plus free-text scrubbing of JSON-like values (dicts, lists, scalars)."""

    def __init__(
        self,
        allowed_keys: frozenset[str] = ALLOWED_KEYS,
        allowed_paths: frozenset[tuple[str, str]] = ALLOWED_PATHS,
        *,
        min_known_length: int = 2,
        regions: Sequence[str] = PHONE_REGIONS,
    ) -> None:
        unknown = sorted(set(regions) - phonenumbers.SUPPORTED_REGIONS)
        if unknown:
            raise ValueError(f"not phonenumbers regions (ISO 3166-1 alpha-2): {', '.join(unknown)}")
        self._allowed_keys = allowed_keys
        self._allowed_paths = allowed_paths
        self._min_known_length = min_known_length
        #: Where a phone number written without its country code in 7-9 digits is looked up.
        self.regions: tuple[str, ...] = tuple(regions)

    def allows(self, parent: str, key: str) -> bool:
        """Whether the value under ``key`` (inside ``parent``, "" at the top) may be kept."""
        return key in self._allowed_keys or (parent, key) in self._allowed_paths

    def discover(self, *snapshots: Any) -> frozenset[str]:
        """The sensitive strings in ``snapshots``: every scalar the allowlist removes, name parts, tokens."""
        found: set[str] = set()
        for snapshot in snapshots:
            self._discover(snapshot, "", found)
        return frozenset(found)

    def _discover(self, node: Any, parent: str, found: set[str]) -> None:
        if isinstance(node, str):
            if _TOKEN_PREFIX in node:
                found.update(APPROVAL_TOKEN_PATTERN.findall(node))
        elif isinstance(node, dict | Mapping):
            for key, value in node.items():
                key = str(key)
                if self.allows(parent, key):
                    self._discover(value, key, found)
                else:
                    self._collect(value, found, split_names=key in _NAME_KEYS)
        elif isinstance(node, list):
            for item in node:
                self._discover(item, parent, found)

    def _collect(self, node: Any, found: set[str], *, split_names: bool) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                self._collect(value, found, split_names=str(key) in _NAME_KEYS)
        elif isinstance(node, list):
            for item in node:
                self._collect(item, found, split_names=split_names)
        elif isinstance(node, str) and node:
            found.add(node)
            if split_names:
                # A name may reappear in part ("Jane" of "Jane Customer") in receipts or messages.
                found.update(part for part in re.split(r"[\s,]+", node) if part)
        elif isinstance(node, int | float) and not isinstance(node, bool):
            # A code typed as a number is still a code.
            found.add(str(node))

    def prepare(self, known: Iterable[str] = ()) -> Scrubber:
        """A :class:`Scrubber` for snapshots that share ``known`` (pattern built once, strings memoized)."""
        return Scrubber(self, _known_pattern(known, self._min_known_length))

    def redact(self, value: Any, known: Iterable[str] = ()) -> Any:
        """A redacted deep copy of ``value``; ``known`` strings are scrubbed wherever they reappear."""
        return self.prepare(known).redact(value)

    def scrub_text(self, text: str, known: Iterable[str] = ()) -> str:
        """``text`` with approval tokens, email addresses, phone numbers and ``known`` strings redacted."""
        return _scrub(text, _known_pattern(known, self._min_known_length), self.regions)


def _scrub(text: str, pattern: re.Pattern[str] | None, regions: Sequence[str]) -> str:
    # The token first, so its marker stays; contacts before known strings, so a redacted name inside an
    # address ("Jane.Doe@…") cannot cut the address in two and leave its domain behind.
    if _TOKEN_PREFIX in text:
        text = APPROVAL_TOKEN_PATTERN.sub(_TOKEN_MARKER, text)
    text = redact_contacts(text, REDACTED, regions)
    return pattern.sub(REDACTED, text) if pattern is not None else text
