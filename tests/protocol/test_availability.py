"""availability.find's protocol rules in the core: start order, pages that hold every slot once, the
partial-page notice, display context once, and the input checks."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from osbp.protocol.availability import AvailabilityPage, check_find_input, page_slots
from osbp.protocol.models import AvailabilityFindInput, OperatingHours, Problem, Slot

NEXT_START = re.compile(r'earliest_start="([^"]+)"')
DAY = "2030-05-06"


def _slot(start: str, provider: str = "p1", schedule: str = "s1") -> Slot:
    return Slot(
        id=f"{schedule}:{provider}:svc:{DAY}T{start}:00",
        organization_id="org",
        organization_name="Org",
        schedule_id=schedule,
        schedule_hours=[OperatingHours(day=1, open="09:00", close="17:00")],
        schedule_timezone="America/New_York",
        provider_id=provider,
        provider_image_url=f"https://img.example/{provider}.jpg",
        service_id="svc",
        starts_at_local=f"{DAY}T{start}:00",
        ends_at_local=f"{DAY}T{start}:00",
    )


def _page(slots: list[Slot], earliest_start: str | None, limit: int | None) -> AvailabilityPage:
    found = page_slots(slots, earliest_start=earliest_start, limit=limit)
    assert isinstance(found, AvailabilityPage)
    return found


def _pages(slots: list[Slot], limit: int | None) -> list[list[Slot]]:
    pages, start = [], None
    while True:
        found = _page(slots, start, limit)
        pages.append(found.slots)
        if found.next_start is None:
            return pages
        start = found.next_start


@given(
    starts=st.lists(
        st.tuples(st.integers(8, 19), st.sampled_from([0, 20, 40]), st.sampled_from("ab")), max_size=60
    ),
    limit=st.integers(1, 30) | st.none(),
)
def test_paging_by_earliest_start_returns_every_slot_exactly_once_in_start_order(
    starts: list[tuple[int, int, str]], limit: int | None
) -> None:
    """Platform choice: a page ends between two start times, so the next resumes with no loss or repeat,
    whatever order the port returned the slots in."""
    slots = [_slot(f"{hour:02d}:{minute:02d}", provider) for hour, minute, provider in dict.fromkeys(starts)]
    pages = _pages(slots, limit)
    seen = [slot.id for shown in pages for slot in shown]
    assert sorted(seen) == sorted(slot.id for slot in slots)
    assert len(seen) == len(set(seen))
    flat = [slot.starts_at_local for shown in pages for slot in shown]
    assert flat == sorted(flat)
    if limit is None:
        assert len(pages) == 1  # no limit: the whole day in one answer
    else:
        assert all(len(shown) <= limit + 1 for shown in pages)  # one more at most: two providers, one start


def test_slots_sharing_a_start_keep_the_ports_order() -> None:
    """Platform choice: the sort is stable, so the port's order among equal starts is kept."""
    slots = [_slot("10:00", "b"), _slot("09:00", "z"), _slot("10:00", "a")]
    assert [slot.provider_id for slot in _page(slots, None, None).slots] == ["z", "b", "a"]


def test_a_page_never_splits_the_slots_of_one_start_time() -> None:
    """Platform choice: a page keeps every slot sharing its last start time, so no slot is skipped."""
    slots = [_slot("09:00", "a"), _slot("09:00", "b"), _slot("09:20", "a"), _slot("09:20", "b")]
    first = _page(slots, None, 1)
    assert [slot.provider_id for slot in first.slots] == ["a", "b"]
    assert (first.total, first.next_start) == (4, "2030-05-06T09:20:00")


def test_earliest_start_is_inclusive_as_the_mandates_field_of_that_name() -> None:
    """OSBP spec, BookingMandate (earliest_start compared against starts_at_local): at or after it."""
    slots = [_slot("09:00"), _slot("09:20"), _slot("09:40")]
    found = _page(slots, "2030-05-06T09:20:00", None)
    assert [slot.starts_at_local for slot in found.slots] == ["2030-05-06T09:20:00", "2030-05-06T09:40:00"]
    assert (found.total, found.next_start, found.notice) == (2, None, None)
    later = _page(slots, "2030-05-06T09:20:00.5", None)
    assert [slot.starts_at_local for slot in later.slots] == ["2030-05-06T09:40:00"]


def test_a_partial_page_says_how_many_slots_there_are_and_how_to_get_the_next() -> None:
    """OSBP spec, Result Envelope (osbp_runtime describes how the answer was produced): later slots are
    named as not shown, never as taken, with the exact earliest_start of the next page."""
    slots = [_slot(f"{hour:02d}:00") for hour in range(8, 20)]
    notice = _page(slots, None, 5).notice
    assert notice is not None
    assert notice.idempotency is None
    assert notice.message == (
        "Partial list: the first 5 of 12 open slots. The 7 later slots, from 2030-05-06T13:00:00 "
        "merchant-local, are not shown here, not taken: to see them, call availability.find again with "
        'the same arguments plus earliest_start="2030-05-06T13:00:00".'
    )
    assert NEXT_START.findall(notice.message) == ["2030-05-06T13:00:00"]


def test_display_context_appears_once_per_schedule_and_provider() -> None:
    """Platform choice (OSBP spec, Time Discipline: hours are display context only): repeated context once."""
    slots = [_slot("09:00", "a"), _slot("09:00", "b"), _slot("09:20", "a", "s2"), _slot("09:40", "b", "s2")]
    shown = [slot.to_wire() for slot in _page(slots, None, None).slots]
    assert all(slot["organization_name"] == "Org" for slot in shown)
    assert ["schedule_hours" in slot for slot in shown] == [True, False, True, False]
    assert ["provider_image_url" in slot for slot in shown] == [True, True, False, False]
    assert all(slot["schedule_timezone"] == "America/New_York" for slot in shown)


def test_a_slot_without_a_wall_clock_start_is_the_adapters_bug() -> None:
    """OSBP spec, Time Discipline (starts_at_local is merchant wall-clock): the core cannot order it."""
    broken = _slot("09:00").model_copy(update={"starts_at_local": "2030-05-06T09:00:00-04:00"})
    found = page_slots([_slot("08:00"), broken], earliest_start=None, limit=None)
    assert isinstance(found, Problem)
    assert (found.code, found.retryable) == ("internal_adapter_error", False)


@pytest.mark.parametrize(
    ("arguments", "refused"),
    [
        ({"date": "2030-02-30"}, "date must be a merchant-local date YYYY-MM-DD."),
        ({"date": "06/05/2030"}, "date must be a merchant-local date YYYY-MM-DD."),
        ({"date": DAY, "earliest_start": "09:00"}, "earliest_start must be a merchant-local wall-clock"),
        ({"date": DAY, "earliest_start": f"{DAY}T09:00:00Z"}, "earliest_start must be a merchant-local"),
        ({"date": DAY, "earliest_start": f"{DAY}T09:00:00"}, None),
        ({"date": DAY}, None),
    ],
)
def test_a_malformed_date_or_earliest_start_is_refused_with_invalid_input(
    arguments: dict[str, str], refused: str | None
) -> None:
    """OSBP spec, Time Discipline (a merchant-local date; wall-clock with no offset)."""
    found = check_find_input(AvailabilityFindInput(**arguments))  # type: ignore[arg-type]
    if refused is None:
        assert found is None
    else:
        assert found is not None
        assert (found.code, found.retryable) == ("invalid_input", False)
        assert found.message.startswith(refused)
