"""The final-confirmation gate: no platform appointment create before the user approved the exact booking.

The adapter calls :meth:`ApprovalGate.evaluate` after mandate validation and the slot check, with the
booking.create input and the summary built by :func:`build_approval_summary` from the freshly resolved
facts. It answers :class:`Approved` or the challenge :class:`~osbp.protocol.models.Problem`
(``requires_user_confirmation``, retryable) whose message is the user-facing summary followed by a
machine-directed retry instruction containing exactly ``approval.token="<token>"``.

Token rules:

* unguessable (``secrets`` by default; the source is injectable), issued for 10 minutes on the injected
  clock and persisted in the shared state file beside the idempotency records, as its SHA-256 only
  (:func:`~osbp.protocol.store.secret_hash`): the file never holds a token that could approve;
* bound to the payload hash (:func:`~osbp.protocol.idempotency.booking_payload_hash`: the input without
  ``approval`` and ``verification_code``, so the idempotency_key is included) **and** to the SHA-256 of the
  summary text the user saw;
* fresh on every challenge: a repeated preflight of the same payload and summary gets a new token, and the
  earlier unspent tokens of that payload and summary stay valid until they expire (the user approved the
  same facts, and an agent that retried a preflight whose answer it lost, or raced two, holds either);
  when the summary changes (price, policy text, names) the gate re-challenges with the fresh summary and
  a fresh token, and the tokens issued for another summary of that payload stop working;
* never authorizes another payload or idempotency key (that payload gets its own challenge), nor another
  subject: on a remote call the principal's subject is bound with the payload
  (:func:`~osbp.protocol.principal.subject_binding`), so a token challenged to one subject is "not valid
  for this booking" when another redeems it; without a principal (stdio) the binding is the payload hash;
* spent by :meth:`ApprovalGate.mark_spent` once the booking is created, with every other token of that
  payload (replays are the idempotency store's job). A spent, expired or foreign token gets a fresh
  challenge, never an approval.

When the facts behind a challenge carry the platform's validator, the gate keeps that offer with the
token's row (:meth:`ApprovalGate.evaluate`'s ``offer``; JSON of the service, slot, policy and validator:
no token, no customer data beyond what the payload hash already binds), and
:meth:`ApprovalGate.approved_offer` hands it back for the approved retry of the same payload while the
token is unspent and unexpired, so the core can place it with the validator instead of resolving again.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from osbp.protocol.canonical import sha256_hex
from osbp.protocol.clock import Clock, SystemClock
from osbp.protocol.idempotency import booking_payload_hash
from osbp.protocol.models import Approval, BookingCreateInput, Customer, Money, Policy, Problem, Service, Slot
from osbp.protocol.money import fixed_amount, format_display
from osbp.protocol.principal import subject_binding
from osbp.protocol.problems import ProblemCode, problem
from osbp.protocol.state import StateBackend
from osbp.protocol.store import duration_micros, secret_hash, to_micros
from osbp.protocol.timeutil import parse_duration_minutes, parse_wall_clock

__all__ = [
    "APPROVAL_TOKEN_PATTERN",
    "APPROVAL_TTL",
    "ApprovalDecision",
    "ApprovalGate",
    "Approved",
    "build_approval_summary",
    "default_token_source",
    "merchant_visible_name",
]

#: How long an approval token stays valid (the reference gate's ten minutes).
APPROVAL_TTL = timedelta(minutes=10)
#: Finds the token in a challenge message: the one format agents, redactors and conformance rely on.
APPROVAL_TOKEN_PATTERN = re.compile(r'approval\.token="([^"]+)"')


def default_token_source() -> str:
    """An unguessable approval token (256 bits from ``secrets``)."""
    return "apv_" + secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class Approved:
    """The attempt carries a valid approval; ``token`` is spent with :meth:`ApprovalGate.mark_spent`."""

    token: str


ApprovalDecision = Approved | Problem


# --- The summary ------------------------------------------------------------------------------------------


def _price_text(money: Money | None) -> str:
    if money is None:
        return "not reported by the merchant"
    amount = fixed_amount(money)
    if amount is None:
        return f"not fixed ({(money.type or 'unknown').replace('_', ' ')})"
    return format_display(amount, money.currency) or f"{amount} minor units of {money.currency}"


def _span(duration: str | None) -> str | None:
    minutes = parse_duration_minutes(duration) if duration else None
    if minutes is None:
        return None
    hours, rest = divmod(minutes, 60)
    parts = [f"{hours} hour{'s' * (hours != 1)}"] * bool(hours) + [
        f"{rest} minute{'s' * (rest != 1)}"
    ] * bool(rest)
    return " ".join(parts) or "0 minutes"


def merchant_visible_name(customer: Customer | None) -> str | None:
    """The customer name as sent to the platform by default: display_name, else given + family name."""
    if customer is None:
        return None
    if customer.display_name:
        return customer.display_name
    joined = " ".join(part for part in (customer.given_name, customer.family_name) if part)
    return joined or None


def _when(slot: Slot, policy: Policy) -> str:
    timezone = slot.schedule_timezone or (policy.organization.timezone if policy.organization else None)
    start, end = parse_wall_clock(slot.starts_at_local), parse_wall_clock(slot.ends_at_local)
    zone_text = f"{timezone} time" if timezone else "merchant local time; the timezone was not reported"
    if start is None:
        return f"at {slot.starts_at_local} ({zone_text})"
    text = f"on {start:%A}, {start:%Y-%m-%d} at {start:%H:%M}"
    if end is not None:
        text += f" until {end:%H:%M}" if end.date() == start.date() else f" until {end:%Y-%m-%d %H:%M}"
    return f"{text} ({zone_text})"


def _where(slot: Slot, policy: Policy) -> str:
    provider = slot.provider_name or (f"provider {slot.provider_id}" if slot.provider_id else None)
    location = slot.schedule_name or f"schedule {slot.schedule_id}"
    if slot.schedule_address:
        location += f" ({slot.schedule_address})"
    organization = slot.organization_name or (policy.organization.name if policy.organization else None)
    text = f" with {provider}" if provider else ""
    text += f" at {location}"
    return text + (f", {organization}" if organization else "")


_NOT_COLLECTED = "OSBP does not collect it"


def _payment_sentence(policy: Policy, price: Money | None) -> str:
    requirement = policy.payment_requirement
    deposit = policy.deposit
    if requirement == "none" and (deposit is None or fixed_amount(deposit) == 0):
        return "No upfront payment or deposit is required to book."
    if requirement == "full_prepay":
        amount = _price_text(deposit if deposit is not None and deposit.amount_minor else price)
        return f"Full payment of {amount} is required in advance, payable to the merchant ({_NOT_COLLECTED})."
    if requirement in ("deposit", "none"):
        return f"A deposit of {_price_text(deposit)} is required, payable to the merchant ({_NOT_COLLECTED})."
    return "The merchant's payment requirement is unknown."


def _cancellation_sentence(policy: Policy) -> str:
    """Whether, until when and at what cost the booking can be cancelled with the merchant, in prose."""
    window = _span(policy.cancellation_window)
    fee = _price_text(policy.cancellation_fee) if policy.cancellation_fee is not None else None
    if policy.cancellation_enabled is False:
        # A window is meaningless when nothing can be cancelled; a reported fee is still disclosed.
        extra = f"; it reports a cancellation fee of {fee}" if fee else ""
        return f"The merchant does not allow this booking to be cancelled{extra}."
    if policy.cancellation_enabled is True:
        if window:
            later = f"; cancelling later costs a cancellation fee of {fee}" if fee else ""
            return f"Free cancellation with the merchant up to {window} before the appointment{later}."
        if fee:
            return f"The merchant allows cancellation for a cancellation fee of {fee}."
        return "The merchant allows cancellation and reported no deadline or cancellation fee."
    unknown = "The merchant did not report whether this booking can be cancelled"
    if window and fee:
        return f"{unknown}; cancelling less than {window} before the appointment costs {fee}."
    if window:
        return f"{unknown}; its cancellation deadline is {window} before the appointment."
    if fee:
        return f"{unknown}; it reports a cancellation fee of {fee}."
    return f"{unknown}."


def _cancellation_sentences(policy: Policy) -> list[str]:
    sentences = [_cancellation_sentence(policy)]
    grace = _span(policy.late_grace)
    if grace:
        sentences.append(f"Arriving more than {grace} late counts as a no-show.")
    if policy.no_show_fee is not None:
        sentences.append(f"No-show fee: {_price_text(policy.no_show_fee)}.")
    if policy.cancellation_fee is not None or policy.no_show_fee is not None:
        sentences.append("These fees are set by the merchant; the booking mandate does not limit them.")
    if policy.cancellation_note:
        sentences.append(f'Merchant cancellation note: "{policy.cancellation_note}"')
    return sentences


def _name_sentences(customer: Customer | None, name: str | None) -> list[str]:
    """The merchant-visible name, then each name field sent beside it, so a swapped pair shows."""
    if not name:
        return []
    sentences = [f"The merchant will see the customer name: {name}."]
    given = customer.given_name if customer is not None else None
    family = customer.family_name if customer is not None else None
    if given and family:
        sentences.append(f"Given name: {given}; family name: {family}.")
    elif given:
        sentences.append(f"Given name: {given}; no family name is sent.")
    elif family:
        sentences.append(f"Family name: {family}; no given name is sent.")
    return sentences


def build_approval_summary(
    service: Service,
    slot: Slot,
    policy: Policy,
    customer: Customer | None = None,
    *,
    customer_name: str | None = None,
) -> str:
    """The user-facing plain-prose summary of the exact booking (pure: same facts, same text).

    ``customer_name`` is the display name sent to the platform when the caller derives it itself
    (default: :func:`merchant_visible_name`); the customer's given and family names, which are sent
    beside it, are stated too.
    """
    price = slot.price or service.price
    sentences = [
        f"Book {service.name} {_when(slot, policy)}{_where(slot, policy)}.",
        f"Price: {_price_text(price)}.",
        _payment_sentence(policy, price),
        *_cancellation_sentences(policy),
        *_name_sentences(customer, customer_name or merchant_visible_name(customer)),
        "Once booked, OSBP cannot cancel or change this appointment.",
    ]
    return " ".join(sentences)


def _challenge(summary: str, token: str, reason: str | None, tool: str = "booking.create") -> Problem:
    lead = f"{reason} A fresh final confirmation is required. " if reason else ""
    return problem(
        ProblemCode.REQUIRES_USER_CONFIRMATION,
        f"{lead}Final confirmation required: show the user this summary and ask them to confirm it.\n\n"
        f"{summary}\n\n"
        f"Agent instruction (never show this to the user): after the user confirms, retry {tool} with "
        f'the same payload and idempotency_key plus approval.confirmed=true and approval.token="{token}".',
        retryable=True,
    )


# --- The gate ---------------------------------------------------------------------------------------------


class ApprovalGate:
    """Issues, checks and spends approval tokens in the shared OSBP state file."""

    def __init__(
        self,
        state: StateBackend,
        *,
        clock: Clock | None = None,
        token_source: Callable[[], str] = default_token_source,
        ttl: timedelta = APPROVAL_TTL,
    ) -> None:
        self._state = state
        self._clock = clock or SystemClock()
        self._token_source = token_source
        self._ttl = ttl

    def evaluate(self, inp: BookingCreateInput, summary: str, offer: str | None = None) -> ApprovalDecision:
        """:class:`Approved` if ``inp.approval`` is valid for this payload and summary, else the challenge.

        ``offer`` (the resolved offer's JSON, when it carries a validator) is kept with a new challenge's
        token for :meth:`approved_offer`.
        """
        return self.evaluate_payload(booking_payload_hash(inp), inp.approval, summary, offer=offer)

    def evaluate_payload(
        self,
        payload_hash: str,
        approval: Approval | None,
        summary: str,
        *,
        offer: str | None = None,
        summary_hash: str | None = None,
        tool: str = "booking.create",
    ) -> ApprovalDecision:
        """:meth:`evaluate` for any effect's payload hash: ``summary_hash`` (default: the summary's) is bound.

        ``tool`` is the dotted tool name the challenge tells the agent to retry.
        """
        payload_hash = subject_binding(payload_hash)
        summary_hash = summary_hash or sha256_hex(summary)
        now = to_micros(self._clock.now())
        reason: str | None = None
        with self._state.write() as db:
            if approval is not None:
                row = db.execute(
                    "SELECT payload_hash, summary_hash, expires_at, spent_at FROM approvals"
                    " WHERE token_hash = ?",
                    (secret_hash(approval.token),),
                ).fetchone()
                if row is None or row[0] != payload_hash:
                    reason = "The approval token is not valid for this booking."
                elif row[3] is not None:
                    reason = "The approval token was already used."
                elif row[2] <= now:
                    reason = "The approval token has expired."
                elif row[1] != summary_hash:
                    reason = "The booking details changed since the user approved them."
                else:
                    return Approved(approval.token)
            # The user is shown this summary now: tokens of the payload bound to another one must stop
            # authorizing anything; those of this summary stay valid (the same facts were approved).
            db.execute(
                "UPDATE approvals SET spent_at = ? WHERE payload_hash = ? AND summary_hash != ?"
                " AND spent_at IS NULL",
                (now, payload_hash, summary_hash),
            )
            db.execute("DELETE FROM approvals WHERE expires_at < ?", (now - 86_400_000_000,))
            token = self._token_source()
            db.execute(
                "INSERT INTO approvals"
                " (token_hash, payload_hash, summary_hash, issued_at, expires_at, offer_json)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    secret_hash(token),
                    payload_hash,
                    summary_hash,
                    now,
                    now + duration_micros(self._ttl),
                    offer,
                ),
            )
        return _challenge(summary, token, reason, tool)

    def approved_offer(self, inp: BookingCreateInput) -> str | None:
        """The offer kept with ``inp.approval``'s token, if the token is this payload's, unspent, unexpired.

        ``None`` otherwise (no approval, another payload, spent, expired, or no offer kept): the caller
        resolves afresh and :meth:`evaluate` answers the token as it would have.
        """
        if inp.approval is None:
            return None
        with self._state.read() as db:
            row = db.execute(
                "SELECT payload_hash, expires_at, spent_at, offer_json FROM approvals WHERE token_hash = ?",
                (secret_hash(inp.approval.token),),
            ).fetchone()
        if row is None or row[0] != subject_binding(booking_payload_hash(inp)) or row[2] is not None:
            return None
        if row[1] <= to_micros(self._clock.now()):
            return None
        offer: str | None = row[3]
        return offer

    def mark_spent(self, token: str) -> None:
        """Spend ``token``, and every other token of its payload, once the booking it approved was created."""
        now = to_micros(self._clock.now())
        with self._state.write() as db:
            db.execute(
                "UPDATE approvals SET spent_at = ? WHERE spent_at IS NULL AND payload_hash ="
                " (SELECT payload_hash FROM approvals WHERE token_hash = ?)",
                (now, secret_hash(token)),
            )

    async def aevaluate(
        self, inp: BookingCreateInput, summary: str, offer: str | None = None
    ) -> ApprovalDecision:
        """:meth:`evaluate` on the event loop when the file's lock is free, else in a worker thread."""
        return await self._state.run(lambda: self.evaluate(inp, summary, offer))

    async def aevaluate_payload(
        self,
        payload_hash: str,
        approval: Approval | None,
        summary: str,
        *,
        summary_hash: str | None = None,
        tool: str = "booking.create",
    ) -> ApprovalDecision:
        """:meth:`evaluate_payload` on the event loop when the file's lock is free, else in a thread."""
        return await self._state.run(
            lambda: self.evaluate_payload(
                payload_hash, approval, summary, summary_hash=summary_hash, tool=tool
            )
        )

    async def aapproved_offer(self, inp: BookingCreateInput) -> str | None:
        """:meth:`approved_offer` on the loop when the lock is free (no lookup without an approval)."""
        if inp.approval is None:
            return None
        return await self._state.run(lambda: self.approved_offer(inp))

    async def amark_spent(self, token: str) -> None:
        """:meth:`mark_spent` on the event loop when the file's lock is free, else in a worker thread."""
        await self._state.run(lambda: self.mark_spent(token))
