"""RFC 8785 canonical JSON and hashing."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
import rfc8785
from hypothesis import example, given
from hypothesis import strategies as st

from osbp.protocol.canonical import canonical_json, canonical_object, sha256_hex, sha256_hex_bytes
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


# RFC 8785 admits integers only in the I-JSON safe range.
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


@given(
    st.dictionaries(st.text(max_size=6), _json_values, max_size=6),
    st.data(),
)
def test_an_object_with_reused_member_bytes_is_exactly_its_canonical_json(members, data) -> None:
    """RFC 8785 §3.2.3 (property): members serialized alone splice in unchanged, in UTF-16 key order."""
    reused = data.draw(st.sets(st.sampled_from(sorted(members)) if members else st.nothing()))
    precomputed = {key: canonical_json(members[key]) for key in reused}
    assert canonical_object(members, precomputed) == canonical_json(members)


def test_object_keys_sort_by_utf16_code_units_not_code_points() -> None:
    """RFC 8785 §3.2.3: an astral key (surrogate pair 0xD8xx) sorts before U+FFFD, unlike code points."""
    members = {"\ufffd": 1, "\U0001f600": 2}
    assert canonical_object(members, {}) == canonical_json(members)
    assert canonical_object(members, {}).index("\U0001f600".encode()) < canonical_object(members, {}).index(
        "\ufffd".encode()
    )


def test_hash_of_canonical_bytes_is_the_hash_of_the_value() -> None:
    """Platform choice: hashing reused canonical bytes equals hashing the value itself."""
    value = {"b": [1, "x"], "a": None}
    assert sha256_hex_bytes(canonical_json(value)) == sha256_hex(value)


# Everything a caller might hand over: any floats and integers (also outside RFC 8785's domain), any
# code points (also lone surrogates and astral ones, in keys too), tuples beside lists.
_any_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats()
    | st.floats(min_value=-1e17, max_value=1e17)
    | st.text(st.characters(codec=None)),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(st.characters(codec=None), max_size=4), inner, max_size=4)
    ),
    max_leaves=16,
)


# What rfc8785 raises for a value that is not JSON (UnicodeEncodeError: a lone surrogate in a key).
_REFUSED = (rfc8785.CanonicalizationError, UnicodeEncodeError)


def _reference(value: Any) -> bytes | None:
    """rfc8785's bytes, or None where it refuses the value."""
    try:
        return rfc8785.dumps(value)
    except _REFUSED:
        return None


@given(_any_values)
@example({"b": 40.0, "a": 0.5, "c": -0.0})  # integral floats: ECMAScript writes 40 and 0
@example(1e-4)  # the thresholds of repr's and ECMAScript's exponent notation, each on its own
@example(9.5e-5)
@example(1.5e-7)
@example(123.456)
@example(1e16)
@example(1e21)
@example(5e-324)
@example({"\ufffd": 1, "\U0001f600": 2, "z": {"\u00e9": 3}})  # UTF-16 order differs from code points
@example("\ud800")  # a lone surrogate is not JSON text
@example({"n": 2**53})  # integers outside I-JSON's domain are refused
@example([-(2**53) + 1])
@example({"a\u2028\x00\x7f\x1f": '\x08\x0c\n\r\t"\\/'})  # every escape rule
def test_canonical_json_is_byte_for_byte_the_rfc8785_reference(value: Any) -> None:
    """The C-encoder fast path never changes a byte: equal to rfc8785.dumps, or refused like it."""
    expected = _reference(value)
    if expected is not None:
        assert canonical_json(value) == expected
    else:
        with pytest.raises(_REFUSED):
            canonical_json(value)


def test_a_cyclic_value_is_refused_not_looped_over() -> None:
    """A value that contains itself is not JSON: refused at once, like rfc8785 does."""
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(RecursionError):
        canonical_json(cyclic)


def test_deep_but_finite_values_still_serialize_exactly() -> None:
    deep: Any = "leaf"
    for _ in range(300):
        deep = {"k": [deep]}
    assert canonical_json(deep) == rfc8785.dumps(deep)
