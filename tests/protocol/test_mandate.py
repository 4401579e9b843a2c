"""validate_mandate: every Mandate Enforcement rule, every boundary, in the spec's order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from osbp.protocol.mandate import check_requested_wall_clock, validate_mandate
from osbp.protocol.models import BookingMandate, Policy, Problem, Service, Slot

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
ORG = "org_01jw3z8x9k2m4n6p8r0s1t3v5w"


def usd(amount: int | None, currency: str = "USD", kind: str | None = None) -> dict[str, Any]:
    money: dict[str, Any] = {"currency": currency}
    if amount is not None:
        money["amount_minor"] = amount
    if kind is not None:
        money["type"] = kind
    return money


def mandate(**changes: Any) -> BookingMandate:
    base: dict[str, Any] = {
        "id": "mnd_1",
        "expires_at": "2026-05-01T23:59:59-07:00",
        "allowed_actions": ["booking.create"],
        "organization_id": ORG,
        "service_ids": ["service_123"],
        "provider_ids": ["provider_123"],
        "schedule_ids": ["schedule_123"],
        "earliest_start": "2026-05-01T09:00:00",
        "latest_end": "2026-05-14T18:00:00",
        "max_price": usd(10000),
        "allow_policy_fee": False,
        "max_extra_fee": usd(0),
    }
    base.update(changes)
    return BookingMandate.model_validate({k: v for k, v in base.items() if v is not ...})


def slot(**changes: Any) -> Slot:
    base: dict[str, Any] = {
        "id": "schedule_123:provider_123:service_123:2026-05-05T13:00:00",
        "organization_id": ORG,
        "schedule_id": "schedule_123",
        "schedule_timezone": "America/Los_Angeles",
        "provider_id": "provider_123",
        "service_id": "service_123",
        "starts_at": "2026-05-05T20:00:00Z",
        "ends_at": "2026-05-05T21:00:00Z",
        "starts_at_local": "2026-05-05T13:00:00",
        "ends_at_local": "2026-05-05T14:00:00",
        "price": usd(9500),
    }
    base.update(changes)
    return Slot.model_validate({k: v for k, v in base.items() if v is not ...})


def service(**changes: Any) -> Service:
    base: dict[str, Any] = {"id": "service_123", "name": "Haircut", "duration": "PT60M", "price": usd(9500)}
    base.update(changes)
    return Service.model_validate({k: v for k, v in base.items() if v is not ...})


def policy(**changes: Any) -> Policy:
    base: dict[str, Any] = {
        "service_id": "service_123",
        "payment_requirement": "none",
        "deposit": usd(0),
        "organization": {"id": ORG, "name": "Bayview Hair Studio", "timezone": "America/Los_Angeles"},
    }
    base.update(changes)
    return Policy.model_validate({k: v for k, v in base.items() if v is not ...})


def check(
    m: BookingMandate | None = None,
    s: Slot | None = None,
    sv: Service | None = None,
    p: Policy | None = None,
    now: datetime = NOW,
    action: str = "booking.create",
) -> Problem | None:
    return validate_mandate(
        m or mandate(),
        slot=s or slot(),
        service=sv or service(),
        policy=p or policy(),
        now=now,
        action=action,
    )


def code(result: Problem | None) -> str | None:
    return None if result is None else result.code


def test_spec_example_is_inside_the_mandate() -> None:
    """The spec's own mandate and slot pass (OSBP spec, BookingMandate and availability.find)."""
    assert check() is None


CASES: list[tuple[str, dict[str, Any], str]] = [
    # 1. well-formed
    ("missing id", {"m": {"id": ...}}, "invalid_mandate"),
    ("empty id", {"m": {"id": ""}}, "invalid_mandate"),
    ("missing expires_at", {"m": {"expires_at": ...}}, "invalid_mandate"),
    ("naked expires_at", {"m": {"expires_at": "2026-05-01T23:59:59"}}, "invalid_mandate"),
    ("date-only expires_at", {"m": {"expires_at": "2026-05-01"}}, "invalid_mandate"),
    ("missing allowed_actions", {"m": {"allowed_actions": ...}}, "invalid_mandate"),
    ("missing organization_id", {"m": {"organization_id": ...}}, "invalid_mandate"),
    ("missing earliest_start", {"m": {"earliest_start": ...}}, "invalid_mandate"),
    ("missing latest_end", {"m": {"latest_end": ...}}, "invalid_mandate"),
    ("missing max_price", {"m": {"max_price": ...}}, "invalid_mandate"),
    ("max_price without amount", {"m": {"max_price": usd(None)}}, "invalid_mandate"),
    ("max_extra_fee not fixed", {"m": {"max_extra_fee": usd(None, kind="unknown")}}, "invalid_mandate"),
    # 2. expiry
    ("expired", {"now": datetime(2026, 5, 2, 7, 0, tzinfo=UTC)}, "mandate_expired"),
    # 3. action
    ("action not allowed", {"m": {"allowed_actions": ["availability.find"]}}, "action_not_allowed"),
    ("empty allowed_actions", {"m": {"allowed_actions": []}}, "action_not_allowed"),
    # 4. scope
    ("other organization", {"s": {"organization_id": "org_other"}}, "organization_not_allowed"),
    ("policy organization differs", {"p": {"organization": {"id": "org_other"}}}, "organization_not_allowed"),
    ("other service", {"s": {"service_id": "service_999"}}, "service_not_allowed"),
    ("empty service allow-list", {"m": {"service_ids": []}}, "service_not_allowed"),
    ("other schedule", {"s": {"schedule_id": "schedule_999"}}, "schedule_not_allowed"),
    ("empty schedule allow-list", {"m": {"schedule_ids": []}}, "schedule_not_allowed"),
    ("slot without provider", {"s": {"provider_id": ...}}, "provider_unknown"),
    ("slot with empty provider", {"s": {"provider_id": ""}}, "provider_unknown"),
    (
        "empty provider with empty list",
        {"s": {"provider_id": ""}, "m": {"provider_ids": []}},
        "provider_unknown",
    ),
    ("other provider", {"s": {"provider_id": "provider_999"}}, "provider_not_allowed"),
    ("empty provider allow-list", {"m": {"provider_ids": []}}, "provider_not_allowed"),
    # 5. time conventions and window
    ("earliest_start with Z", {"m": {"earliest_start": "2026-05-01T09:00:00Z"}}, "invalid_mandate"),
    ("latest_end with offset", {"m": {"latest_end": "2026-05-14T18:00:00-07:00"}}, "invalid_mandate"),
    ("malformed earliest_start", {"m": {"earliest_start": "May 1st"}}, "invalid_mandate"),
    ("slot local with offset", {"s": {"starts_at_local": "2026-05-05T13:00:00-07:00"}}, "invalid_mandate"),
    ("slot local end with Z", {"s": {"ends_at_local": "2026-05-05T14:00:00Z"}}, "invalid_mandate"),
    ("slot instant without offset", {"s": {"starts_at": "2026-05-05T20:00:00"}}, "invalid_mandate"),
    ("slot end instant naked", {"s": {"ends_at": "2026-05-05T21:00:00"}}, "invalid_mandate"),
    ("starts before window", {"s": {"starts_at_local": "2026-05-01T08:59:59"}}, "slot_too_early"),
    ("ends after window", {"s": {"ends_at_local": "2026-05-14T18:00:01"}}, "slot_too_late"),
    # 6. price
    ("price over cap", {"s": {"price": usd(10001)}}, "price_exceeds_mandate"),
    ("price in other currency", {"s": {"price": usd(9500, "EUR")}}, "currency_mismatch"),
    (
        "quote-required price",
        {"s": {"price": usd(None, kind="quote_required")}},
        "requires_user_confirmation",
    ),
    (
        "insurance price",
        {"s": {"price": usd(None, kind="insurance_dependent")}},
        "requires_user_confirmation",
    ),
    (
        "unknown-type price with amount",
        {"s": {"price": usd(9500, kind="unknown")}},
        "requires_user_confirmation",
    ),
    ("no price anywhere", {"s": {"price": ...}, "sv": {"price": ...}}, "requires_user_confirmation"),
    (
        "service price used when slot has none",
        {"s": {"price": ...}, "sv": {"price": usd(20000)}},
        "price_exceeds_mandate",
    ),
    # 7. consultation
    ("consultation service", {"sv": {"requires_consultation": True}}, "requires_consultation_handoff"),
    # 8. payment
    ("unknown payment", {"p": {"payment_requirement": "unknown"}}, "requires_user_confirmation"),
    ("absent payment requirement", {"p": {"payment_requirement": ...}}, "requires_user_confirmation"),
    (
        "deposit not allowed",
        {"p": {"payment_requirement": "deposit", "deposit": usd(2000)}},
        "requires_payment_handoff",
    ),
    ("full prepay not allowed", {"p": {"payment_requirement": "full_prepay"}}, "requires_payment_handoff"),
    ("none with a real deposit", {"p": {"deposit": usd(2000)}}, "requires_payment_handoff"),
    (
        "deposit over fee cap",
        {
            "p": {"payment_requirement": "deposit", "deposit": usd(2000)},
            "m": {"allow_policy_fee": True, "max_extra_fee": usd(1999)},
        },
        "policy_fee_exceeds_mandate",
    ),
    (
        "deposit in other currency than fee cap",
        {
            "p": {"payment_requirement": "deposit", "deposit": usd(2000)},
            "m": {"allow_policy_fee": True, "max_extra_fee": usd(5000, "EUR")},
        },
        "currency_mismatch",
    ),
    (
        "deposit amount unknown",
        {
            "p": {"payment_requirement": "deposit", "deposit": usd(None, kind="unknown")},
            "m": {"allow_policy_fee": True},
        },
        "requires_user_confirmation",
    ),
    (
        "deposit requirement without amount",
        {"p": {"payment_requirement": "deposit", "deposit": ...}, "m": {"allow_policy_fee": True}},
        "requires_user_confirmation",
    ),
    (
        "full prepay over fee cap",
        {
            "p": {"payment_requirement": "full_prepay", "deposit": ...},
            "m": {"allow_policy_fee": True, "max_extra_fee": usd(9499)},
        },
        "policy_fee_exceeds_mandate",
    ),
    (
        # The spec's own policy example reports a zero deposit; full prepayment is still the price.
        "full prepay with a zero deposit over fee cap",
        {
            "p": {"payment_requirement": "full_prepay", "deposit": usd(0)},
            "m": {"allow_policy_fee": True, "max_extra_fee": usd(0)},
        },
        "policy_fee_exceeds_mandate",
    ),
    (
        "service price in another currency than the slot's",
        {"sv": {"price": usd(9500, "EUR")}},
        "currency_mismatch",
    ),
    (
        "deposit in another currency without a fee cap",
        {
            "p": {"payment_requirement": "deposit", "deposit": usd(2000, "EUR")},
            "m": {"allow_policy_fee": True, "max_extra_fee": ...},
        },
        "currency_mismatch",
    ),
]


def build(changes: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, factory in (("m", mandate), ("s", slot), ("sv", service), ("p", policy)):
        if key in changes:
            out[key] = factory(**changes[key])
    if "now" in changes:
        out["now"] = changes["now"]
    return out


@pytest.mark.parametrize(("name", "changes", "expected"), CASES, ids=[c[0] for c in CASES])
def test_each_rule_answers_its_problem_code(name: str, changes: dict[str, Any], expected: str) -> None:
    """Every Mandate Enforcement rule maps to its Problem code (OSBP spec, Mandate Enforcement)."""
    assert code(check(**build(changes))) == expected


PASSING: list[tuple[str, dict[str, Any]]] = [
    ("price equal to cap", {"s": {"price": usd(10000)}}),
    ("start equal to earliest_start", {"s": {"starts_at_local": "2026-05-01T09:00:00"}}),
    ("end equal to latest_end", {"s": {"ends_at_local": "2026-05-14T18:00:00"}}),
    ("now equal to expires_at", {"now": datetime(2026, 5, 2, 6, 59, 59, tzinfo=UTC)}),
    (
        "absent service list allows any",
        {"m": {"service_ids": ...}, "s": {"service_id": "x"}, "sv": {"id": "x"}},
    ),
    ("absent provider list allows any", {"m": {"provider_ids": ...}, "s": {"provider_id": "other"}}),
    (
        "absent provider list allows a slot without provider",
        {"m": {"provider_ids": ...}, "s": {"provider_id": ...}},
    ),
    ("absent schedule list allows any", {"m": {"schedule_ids": ...}, "s": {"schedule_id": "other"}}),
    ("slot without instants (unknown zone)", {"s": {"starts_at": ..., "ends_at": ...}}),
    ("instant with explicit offset", {"s": {"starts_at": "2026-05-05T13:00:00-07:00"}}),
    ("wall-clock without seconds", {"m": {"earliest_start": "2026-05-01T09:00"}}),
    (
        "allowed deposit equal to fee cap",
        {
            "p": {"payment_requirement": "deposit", "deposit": usd(2000)},
            "m": {"allow_policy_fee": True, "max_extra_fee": usd(2000)},
        },
    ),
    (
        "allowed deposit without fee cap",
        {
            "p": {"payment_requirement": "deposit", "deposit": usd(2000)},
            "m": {"allow_policy_fee": True, "max_extra_fee": ...},
        },
    ),
    (
        "allowed full prepay covered",
        {
            "p": {"payment_requirement": "full_prepay"},
            "m": {"allow_policy_fee": True, "max_extra_fee": usd(9500)},
        },
    ),
    ("policy without organization block", {"p": {"organization": ...}}),
    (
        "cancellation and no-show fees are not capped",
        {"p": {"cancellation_fee": usd(99999), "no_show_fee": usd(99999, "EUR")}},
    ),
    ("mandate allows several actions", {"m": {"allowed_actions": ["availability.find", "booking.create"]}}),
]


@pytest.mark.parametrize(("name", "changes"), PASSING, ids=[c[0] for c in PASSING])
def test_inclusive_boundaries_and_open_scopes_pass(name: str, changes: dict[str, Any]) -> None:
    """Inclusive boundaries, absent scope lists and uncapped fees pass (OSBP spec, Mandate Enforcement)."""
    assert check(**build(changes)) is None


def test_window_is_compared_as_merchant_wall_clock_not_instants() -> None:
    """A Tokyo slot is judged on its local time even if its UTC instant is outside (OSBP spec)."""
    tokyo = slot(
        schedule_timezone="Asia/Tokyo",
        starts_at_local="2026-05-01T09:00:00",
        ends_at_local="2026-05-01T10:00:00",
        starts_at="2026-05-01T00:00:00Z",
        ends_at="2026-05-01T01:00:00Z",
    )
    assert check(s=tokyo) is None
    too_early = slot(starts_at_local="2026-05-01T08:00:00", starts_at="2026-05-01T23:00:00Z")
    assert code(check(s=too_early)) == "slot_too_early"


def test_fail_closed_confirmation_is_not_retryable_and_has_no_token() -> None:
    """The validator's requires_user_confirmation is terminal: not retryable, no token (OSBP spec)."""
    result = check(p=policy(payment_requirement="unknown"))
    assert result is not None
    assert result.code == "requires_user_confirmation"
    assert result.retryable is False
    assert "approval.token" not in result.message


def test_order_follows_the_spec() -> None:
    """When several rules fail, the spec's earlier rule answers (OSBP spec, Mandate Enforcement: in order)."""
    everything_wrong: dict[str, Any] = dict(
        m=mandate(expires_at="2026-04-01T00:00:00Z", allowed_actions=["availability.find"]),
        s=slot(
            service_id="nope", provider_id="", price=usd(999999, "EUR"), starts_at_local="2020-01-01T00:00:00"
        ),
        sv=service(requires_consultation=True),
        p=policy(payment_requirement="unknown"),
    )
    # Step 1 before step 2: a mandate without an id, or with an offset-free expiry, is invalid even when
    # it has also expired.
    assert code(check(**{**everything_wrong, "m": mandate(id=..., expires_at="2026-04-01T00:00:00Z")})) == (
        "invalid_mandate"
    )
    assert code(check(**{**everything_wrong, "m": mandate(expires_at="2026-04-01T00:00:00")})) == (
        "invalid_mandate"
    )
    assert code(check(**everything_wrong)) == "mandate_expired"
    assert (
        code(check(**{**everything_wrong, "now": datetime(2026, 3, 1, tzinfo=UTC)})) == "action_not_allowed"
    )
    in_actions = {**everything_wrong, "m": mandate(allowed_actions=["booking.create"])}
    assert code(check(**in_actions)) == "service_not_allowed"
    scoped = {
        **in_actions,
        "s": slot(provider_id="", price=usd(999999, "EUR"), starts_at_local="2020-01-01T00:00:00"),
    }
    assert code(check(**scoped)) == "provider_unknown"
    provider_ok = {**scoped, "s": slot(price=usd(999999, "EUR"), starts_at_local="2020-01-01T00:00:00")}
    assert code(check(**provider_ok)) == "slot_too_early"
    in_window = {**provider_ok, "s": slot(price=usd(999999, "EUR"))}
    assert code(check(**in_window)) == "currency_mismatch"
    priced = {**in_window, "s": slot()}
    assert code(check(**priced)) == "requires_consultation_handoff"
    assert code(check(**{**priced, "sv": service()})) == "requires_user_confirmation"


def test_scope_problem_wins_over_wall_clock_offsets() -> None:
    """Scope (step 4) is checked before wall-clock conventions (step 5) (OSBP spec, in order)."""
    result = check(m=mandate(earliest_start="2026-05-01T09:00:00Z"), s=slot(provider_id="provider_999"))
    assert code(result) == "provider_not_allowed"


def test_naive_now_is_a_bug() -> None:
    """Instants compare only with instants: a naive now raises (platform choice)."""
    with pytest.raises(ValueError, match="aware"):
        check(now=datetime(2026, 5, 1, 12, 0))


def test_expiry_with_offset_compares_as_instant() -> None:
    """expires_at -07:00 is 06:59:59Z next day: one second later it has expired (OSBP spec, expires_at)."""
    assert (
        code(check(now=datetime(2026, 5, 2, 6, 59, 59, tzinfo=UTC) + timedelta(seconds=1)))
        == "mandate_expired"
    )


@pytest.mark.parametrize(
    ("date", "time", "expected"),
    [
        ("2026-05-05", "13:00", "2026-05-05T13:00:00"),
        ("2026-05-05", "13:00:30", "2026-05-05T13:00:30"),
        ("2026-05-05", "13:00Z", "invalid_mandate"),
        ("2026-05-05", "13:00+02:00", "invalid_mandate"),
        ("2026-05-05", "1pm", "invalid_mandate"),
        ("05/05/2026", "13:00", "invalid_mandate"),
    ],
)
def test_requested_date_and_time_are_offset_free_wall_clock(date: str, time: str, expected: str) -> None:
    """booking.create date/time are merchant wall-clock; an offset is invalid_mandate (OSBP spec, Time)."""
    result = check_requested_wall_clock(date, time)
    assert (result if isinstance(result, str) else result.code) == expected
