"""RFC 8785 canonical JSON and hashing."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from osbp.protocol.canonical import canonical_json, sha256_hex
from osbp.protocol.models import Money


def test_canonical_form_sorts_keys_and_normalises_numbers() -> None:
    """JCS sorts keys, drops whitespace and writes 1.0 as 1 (RFC 8785)."""
    assert canonical_json({"b": 1.0, "a": [True, None, "é"]}) == '{"a":[true,null,"é"],"b":1}'.encode()


def test_models_hash_in_their_wire_form() -> None:
    """A model hashes exactly like its wire JSON, absent optionals omitted (platform choice)."""
    money = Money(amount_minor=9500, currency="USD")
    assert canonical_json(money) == b'{"amount_minor":9500,"currency":"USD"}'
    assert sha256_hex(money) == hashlib.sha256(b'{"amount_minor":9500,"currency":"USD"}').hexdigest()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_hash_ignores_key_order_and_formatting(value: Any) -> None:
    """Equal JSON values hash equal whatever their serialization (property; RFC 8785)."""
    reparsed = json.loads(json.dumps(value, indent=2, sort_keys=False))
    assert sha256_hex(reparsed) == sha256_hex(value)
    assert len(sha256_hex(value)) == 64
