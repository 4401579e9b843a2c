"""Stable aliases for volatile identifiers."""

from osbp.demo.aliases import ALIAS_PATTERN, PLACEHOLDER_PATTERN, Aliaser


def test_aliases_are_numbered_per_kind_in_order_of_first_sight():
    """Platform choice: the same run always yields the same aliases, so traces regenerate byte for byte."""
    aliaser = Aliaser()
    aliaser.register("audit", ["aud_f00", "aud_ba4", "aud_f00"])
    aliaser.register("booking", ["apt_1", None, ""])
    assert aliaser.mapping == {"aud_f00": "aud_alias_1", "aud_ba4": "aud_alias_2", "apt_1": "booking_alias_1"}


def test_aliases_replace_identifiers_inside_longer_strings_everywhere():
    """OSBP spec, Audit: checked-in traces use aliases, never raw ids (receipt text included)."""
    aliaser = Aliaser()
    aliaser.register("booking", ["apt_7c1e"])
    aliaser.register("audit", ["aud_7c1e2"])
    value = {"text": "Booking id: apt_7c1e.", "ids": ["aud_7c1e2", "apt_7c1e"], "n": 3}
    assert aliaser.apply(value) == {
        "text": "Booking id: booking_alias_1.",
        "ids": ["aud_alias_1", "booking_alias_1"],
        "n": 3,
    }


def test_placeholder_pattern_recognises_aliases_placeholders_and_the_redaction_marker():
    """Platform choice: replay treats every alias, placeholder and [redacted] as a wildcard."""
    assert ALIAS_PATTERN.fullmatch("aud_alias_12")
    assert ALIAS_PATTERN.fullmatch("<created_at>")
    assert PLACEHOLDER_PATTERN.fullmatch("[redacted]")
    assert not ALIAS_PATTERN.fullmatch("aud_1234")
