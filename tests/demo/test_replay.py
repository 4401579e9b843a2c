"""Replay's subset check: recorded results against actual ones, aliases and redactions as wildcards."""

from osbp.demo.replay import is_subset


def test_an_actual_result_with_more_fields_still_matches():
    """OSBP spec, Demo Trace (replay): each recorded result must be a subset of the actual one."""
    assert (
        is_subset({"ok": True, "value": {"id": "x"}}, {"ok": True, "value": {"id": "x", "extra": 1}}, {})
        == []
    )


def test_a_different_problem_code_is_a_mismatch():
    """OSBP spec, Demo Trace (replay): replay fails when the server now answers differently."""
    differences = is_subset(
        {"problem": {"code": "price_exceeds_mandate"}}, {"problem": {"code": "slot_taken"}}, {}
    )
    assert differences == [("problem.code", "price_exceeds_mandate", "slot_taken")]


def test_a_missing_field_is_a_mismatch():
    """OSBP spec, Demo Trace (replay): a subset needs every recorded key."""
    assert is_subset({"value": {"id": "x"}}, {"value": {}}, {}) == [("value.id", "x", "<absent>")]


def test_aliases_bind_on_first_sight_and_must_agree_afterwards():
    """Platform choice: booking_alias_1 is one booking id throughout a trace."""
    bindings: dict[str, str] = {}
    recorded = {"booking_id": "booking_alias_1", "text": "Booking id: booking_alias_1."}
    assert is_subset(recorded, {"booking_id": "apt_1", "text": "Booking id: apt_1."}, bindings) == []
    assert bindings == {"booking_alias_1": "apt_1"}
    assert is_subset({"id": "booking_alias_1"}, {"id": "apt_2"}, bindings) == [
        ("id", "booking_alias_1", "apt_2")
    ]


def test_redacted_text_matches_whatever_the_replay_customer_is_called():
    """OSBP spec, Audit: redacted values are not compared, the surrounding prose is."""
    recorded = 'The merchant will see the customer name: [redacted]. approval.token="[redacted]".'
    actual = 'The merchant will see the customer name: Replay Customer. approval.token="apv_x".'
    assert is_subset(recorded, actual, {}) == []
    assert is_subset(recorded, actual.replace("merchant", "shop"), {}) != []


def test_lists_must_match_element_by_element():
    """OSBP spec, Demo Trace (replay): a recorded list is compared in full unless the trace says it was
    shortened."""
    assert is_subset([1, 2], [1, 2, 3], {}) == [(".length", 2, 3)]


def test_a_shortened_list_is_an_ordered_subset_with_the_recorded_total():
    """Platform choice: shortened availability lists still pin order and count."""
    truncated = {"value": {"total": 4}}
    recorded = {"value": [{"t": "09:00"}, {"t": "11:00"}]}
    actual = {"value": [{"t": "09:00"}, {"t": "10:00"}, {"t": "11:00"}, {"t": "12:00"}]}
    assert is_subset(recorded, actual, {}, truncated=truncated) == []
    reordered = {"value": [{"t": "11:00"}, {"t": "09:00"}]}
    assert is_subset(reordered, actual, {}, truncated=truncated) != []
    assert is_subset(recorded, {"value": actual["value"][:3]}, {}, truncated=truncated) == [
        ("value.length", 4, 3)
    ]
