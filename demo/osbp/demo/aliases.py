"""Stable aliases for the volatile values of a recorded run, so a regenerated trace is byte-identical.

Two kinds of volatile value exist:

* **identifiers** (audit event ids, platform booking ids, upstream request ids, and the summary and
  payload hashes the audit binds to a confirmation through the host): unique per run (or, for the hashes,
  digests of the customer's name and contacts, which differ under replay's customer) but meaningful across
  steps (the receipt's booking id is the status call's input). Each distinct value gets
  the next alias of its kind in order of first appearance (``aud_alias_1``, ``booking_alias_1``, …) and
  every occurrence, inside longer strings too, is replaced by it.
* **readings** (RateLimit header values: a window's remaining quota and seconds to reset): not
  identifiers, and two of them may coincide in one run but not in the next, so they are never numbered by
  value. They become fixed placeholders by position (see :mod:`osbp.demo.trace_format`). Audit
  ``created_at`` is no reading: the server's clock is frozen at the platform's instant while recording.

:data:`ALIAS_PATTERN` recognises any alias or redaction placeholder; replay treats those as wildcards.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from osbp.server.redaction import REDACTED

__all__ = ["ALIAS_KINDS", "ALIAS_PATTERN", "PLACEHOLDER_PATTERN", "Aliaser"]

#: kind -> alias prefix; the alias is ``<prefix>_alias_<n>``.
ALIAS_KINDS: dict[str, str] = {
    "audit": "aud",
    "booking": "booking",
    "request": "req",
    "summary_hash": "summary_hash",
    "payload_hash": "payload_hash",
}

#: Matches one alias (``aud_alias_3``) or a fixed placeholder (``<ratelimit>``).
ALIAS_PATTERN = re.compile(r"\b(?:aud|booking|req|summary_hash|payload_hash)_alias_\d+\b|<[a-z_]+>")
#: Anything replay must not compare literally: an alias, a placeholder or the redaction marker.
PLACEHOLDER_PATTERN = re.compile(ALIAS_PATTERN.pattern + "|" + re.escape(REDACTED))


class Aliaser:
    """Numbers identifiers by kind in order of first appearance and substitutes them everywhere."""

    def __init__(self) -> None:
        self._aliases: dict[str, str] = {}
        self._counts: dict[str, int] = dict.fromkeys(ALIAS_KINDS, 0)

    def alias(self, kind: str, value: str) -> str:
        """The alias of ``value`` (allocated on first sight)."""
        if value not in self._aliases:
            self._counts[kind] += 1
            self._aliases[value] = f"{ALIAS_KINDS[kind]}_alias_{self._counts[kind]}"
        return self._aliases[value]

    def register(self, kind: str, values: Iterable[str | None]) -> None:
        """Allocate aliases for ``values`` (``None`` and empty strings are skipped)."""
        for value in values:
            if value:
                self.alias(kind, value)

    @property
    def mapping(self) -> dict[str, str]:
        """Raw value -> alias, for everything registered so far."""
        return dict(self._aliases)

    def apply(self, node: Any) -> Any:
        """A deep copy of ``node`` with every registered value replaced by its alias, in any string."""
        if not self._aliases:
            return node
        # Longest first, so an id that contains another id is replaced whole.
        pattern = re.compile("|".join(re.escape(raw) for raw in sorted(self._aliases, key=len, reverse=True)))
        return self._apply(node, pattern)

    def _apply(self, node: Any, pattern: re.Pattern[str]) -> Any:
        if isinstance(node, dict):
            return {key: self._apply(value, pattern) for key, value in node.items()}
        if isinstance(node, list):
            return [self._apply(item, pattern) for item in node]
        if isinstance(node, str):
            return pattern.sub(lambda match: self._aliases[match.group(0)], node)
        return node
