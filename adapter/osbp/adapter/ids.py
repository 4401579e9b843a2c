"""Bookwell's id grammar, checked before an id is put into a platform URL.

Every Bookwell id is 1–100 characters of ASCII letters, digits, ``_`` and ``-``: the seeded ids
(``carolyns_dental_cleaning``), the generated ones (``apt_`` plus 16 hex digits) and the platform's own
100-character limit on id query parameters (docs/backend-api.md, "Ids"). An id outside that grammar
cannot name anything on the platform, so the adapter answers the same not-found Problem the platform's
404 maps to, without a request: a ``/``, ``..`` or percent-escape never reaches another route, and an
over-long id never becomes an over-long URL.
"""

from __future__ import annotations

import re

__all__ = ["ID_MAX_LENGTH", "is_platform_id"]

#: The platform's longest id (its seed model and its id query parameters say 100).
ID_MAX_LENGTH = 100
_ID = re.compile(rf"[A-Za-z0-9_-]{{1,{ID_MAX_LENGTH}}}")


def is_platform_id(value: str) -> bool:
    """True when ``value`` has the shape of a Bookwell id (it may still name nothing)."""
    return _ID.fullmatch(value) is not None
