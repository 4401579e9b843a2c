"""The lifecycle changes in prose: the approval summaries the user confirms and the result sentences.

Pure functions of the platform's facts (same facts, same text), so a summary's hash changes exactly when a
fact the user is shown changes. Times are merchant-local with the IANA zone; fees are the platform's and
the summaries never claim a fee is capped by anything but the mandate's two lifecycle caps.
"""

from __future__ import annotations

from osbp.protocol.lifecycle_models import SlotPosition
from osbp.protocol.lifecycle_port import ChangeQuote, CurrentSlot
from osbp.protocol.models import Money, Slot
from osbp.protocol.money import fixed_amount, format_display
from osbp.protocol.timeutil import instant_to_wall_clock, parse_wall_clock

__all__ = [
    "cancel_summary",
    "cancel_text",
    "fee_text",
    "free_until_sentence",
    "reschedule_summary",
    "reschedule_text",
]

_NOT_UNDONE_CANCEL = (
    "This cannot be undone through OSBP: a cancelled booking cannot be restored, and the released time may "
    "be taken by someone else."
)
_NOT_UNDONE_MOVE = (
    "This cannot be undone through OSBP: the current time is released and may be taken by someone else."
)


def fee_text(money: Money | None) -> str:
    """A fee or price as display text (``$20.00``), or why it has none."""
    if money is None:
        return "not reported by the merchant"
    amount = fixed_amount(money)
    if amount is None:
        return f"not fixed ({(money.type or 'unknown').replace('_', ' ')})"
    return format_display(amount, money.currency) or f"{amount} minor units of {money.currency}"


def _when(start_local: str, zone: str | None) -> str:
    start = parse_wall_clock(start_local)
    zone_text = f"{zone} time" if zone else "merchant local time"
    if start is None:
        return f"{start_local} ({zone_text})"
    return f"{start:%A}, {start:%Y-%m-%d} at {start:%H:%M} ({zone_text})"


def _with(provider_name: str | None, provider_id: str | None) -> str:
    provider = provider_name or (f"provider {provider_id}" if provider_id else None)
    return f" with {provider}" if provider else ""


def _appointment(slot: CurrentSlot) -> str:
    return f"{slot.service_name} on {_when(slot.starts_at_local, slot.schedule_timezone)}" + _with(
        slot.provider_name, slot.provider_id
    )


def _local(instant: str | None, zone: str | None) -> str | None:
    local = instant_to_wall_clock(instant, zone) if instant and zone else None
    start = parse_wall_clock(local) if local else None
    return None if start is None else f"{start:%H:%M} on {start:%Y-%m-%d} ({zone})"


def free_until_sentence(quote: ChangeQuote) -> str:
    """When cancelling was, or is, free (the cap refusal's last sentence)."""
    until = _local(quote.fee_applies_from, quote.slot.schedule_timezone)
    if until is None:
        return "The merchant reported no time until which cancelling is free."
    charged = fixed_amount(quote.cancellation_fee) if quote.cancellation_fee is not None else None
    verb = "was" if charged else "is"
    return f"Cancelling {verb} free until {until}."


def _cancellation_fee_sentence(quote: ChangeQuote) -> str:
    fee = quote.cancellation_fee
    amount = fixed_amount(fee) if fee is not None else None
    if amount:
        why = f" ({quote.fee_reason})" if quote.fee_reason else ""
        return f"Cancelling now costs a cancellation fee of {fee_text(fee)}{why}, charged by the merchant."
    until = _local(quote.fee_applies_from, quote.slot.schedule_timezone)
    if until is None:
        return "Cancelling now is free."
    later = f" of {fee_text(quote.late_cancellation_fee)}" if quote.late_cancellation_fee else ""
    return f"Cancelling is free until {until}; after that a cancellation fee{later} applies."


def cancel_summary(quote: ChangeQuote) -> str:
    """What the user confirms before booking.cancel."""
    return " ".join(
        [f"Cancel {_appointment(quote.slot)}.", _cancellation_fee_sentence(quote), _NOT_UNDONE_CANCEL]
    )


def _price_difference(old: Money | None, new: Money | None) -> str:
    old_amount = fixed_amount(old) if old is not None else None
    new_amount = fixed_amount(new) if new is not None else None
    both = f"the current appointment costs {fee_text(old)}, the new one {fee_text(new)}"
    if old is None or new is None or old_amount is None or new_amount is None or old.currency != new.currency:
        return f"Price: {both}."
    if old_amount == new_amount:
        return f"Price: {both}; no difference."
    difference = format_display(abs(new_amount - old_amount), new.currency)
    direction = "more" if new_amount > old_amount else "less"
    return f"Price: {both}; {difference} {direction}."


def reschedule_summary(quote: ChangeQuote, new_slot: Slot, new_price: Money | None) -> str:
    """What the user confirms before booking.reschedule: from where to where, prices, fee, no undo."""
    new_when = _when(new_slot.starts_at_local, new_slot.schedule_timezone) + _with(
        new_slot.provider_name, new_slot.provider_id
    )
    fee = quote.reschedule_fee
    fee_sentence = (
        f"The merchant charges a reschedule fee of {fee_text(fee)} for this change."
        if fee is not None and fixed_amount(fee)
        else "There is no reschedule fee."
    )
    return " ".join(
        [
            f"Move {_appointment(quote.slot)} to {new_when}.",
            _price_difference(quote.slot.price, new_price),
            fee_sentence,
            _NOT_UNDONE_MOVE,
        ]
    )


def _charged(fee: Money) -> str:
    return "No fee was charged." if not fixed_amount(fee) else f"A fee of {fee_text(fee)} was charged."


def _at(position: SlotPosition) -> str:
    start = position.starts_at_local
    return f"{start[:10]} at {start[11:16]}"


def cancel_text(service_name: str, position: SlotPosition, fee: Money) -> str:
    """The result sentence of a cancel."""
    zone = f" ({position.schedule_timezone})" if position.schedule_timezone else ""
    return f"Cancelled {service_name} on {_at(position)}{zone}. {_charged(fee)}"


def reschedule_text(service_name: str, previous: SlotPosition, current: SlotPosition, fee: Money) -> str:
    """The result sentence of a reschedule."""
    zone = current.schedule_timezone or previous.schedule_timezone
    zone_text = f" ({zone})" if zone else ""
    return f"Moved {service_name} from {_at(previous)} to {_at(current)}{zone_text}. {_charged(fee)}"
