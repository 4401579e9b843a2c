"""Mutants of the rules the protocol core owns, made at runtime inside the mutant's own server process.

Each entry wraps or replaces one function of :mod:`osbp.protocol` (or of the server's envelope) by
assigning a module attribute before the server starts: the checked-in source is never edited, and only
the process started by ``python -m tests.conformance.mutants.serve NAME`` runs the mutant. The functions
wrapped are the ones the core looks up by module global at call time (``osbp.protocol.mandate._head`` and
its siblings, ``osbp.protocol.booking.validate_mandate``, the approval module's helpers), so one
assignment changes exactly one rule.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Callable
from typing import Any

from osbp.protocol import approval, availability, booking, core, idempotency, mandate
from osbp.protocol.approval import merchant_visible_name
from osbp.protocol.canonical import sha256_hex
from osbp.protocol.contract import Success
from osbp.protocol.idempotency import LOCAL_CACHE_REPLAY, InProgress, Placing, Replay
from osbp.protocol.mandate import check_requested_wall_clock
from osbp.protocol.models import (
    BookingCreateInput,
    Problem,
    Receipt,
    VerificationChallenge,
    VerificationVerifyInput,
)
from osbp.protocol.money import fixed_amount, minor_unit_exponent
from osbp.protocol.port import BookingRequest
from osbp.protocol.problems import ProblemCode, problem
from osbp.protocol.timeutil import parse_wall_clock
from osbp.server import audit, confirmation, dispatch, redaction

__all__ = ["CORE_MUTANTS", "install"]

_MINUTE = dt.timedelta(minutes=1)


def _replace(owner: Any, name: str, value: Any) -> None:
    """Replace ``owner.name`` (a module global the core looks up at call time, or a method) by ``value``."""
    setattr(owner, name, value)


def _wrap(owner: Any, name: str, make: Callable[[Any], Any]) -> None:
    """Replace ``owner.name`` by ``make(original)``."""
    _replace(owner, name, make(getattr(owner, name)))


#: What a decision answers to let the original rule answer instead.
_ORIGINAL: Any = object()


def _decide_first(owner: Any, name: str, decide: Callable[..., Any]) -> None:
    """Replace ``owner.name`` by ``decide``, falling back to the original where it answers ``_ORIGINAL``."""

    def make(original: Any) -> Any:
        def mutated(*args: Any, **kwargs: Any) -> Any:
            answer = decide(*args, **kwargs)
            return original(*args, **kwargs) if answer is _ORIGINAL else answer

        return mutated

    _wrap(owner, name, make)


def _then(owner: Any, name: str, adjust: Callable[..., Any]) -> None:
    """Replace ``owner.name`` by the original followed by ``adjust(result, *args)``."""
    _wrap(owner, name, lambda original: lambda *a, **k: adjust(original(*a, **k), *a, **k))


def _copy(model: Any, **changes: Any) -> Any:
    return model.model_copy(update=changes)


def _shift(value: str | None, delta: dt.timedelta) -> str | None:
    parsed = parse_wall_clock(value) if value else None
    return None if parsed is None else (parsed + delta).strftime("%Y-%m-%dT%H:%M:%S")


# --- Mandate rules, one at a time ------------------------------------------------------------------------


def _expiry_skipped() -> None:
    # Expiry compared against a clock ten years in the past: an expired mandate still authorizes.
    _wrap(
        mandate,
        "_head",
        lambda head: lambda m, *, now, action: head(m, now=now - dt.timedelta(days=3650), action=action),
    )


def _action_skipped() -> None:
    _wrap(
        mandate,
        "_head",
        lambda head: (
            lambda m, *, now, action: head(
                _copy(m, allowed_actions=[*(m.allowed_actions or []), action]), now=now, action=action
            )
        ),
    )


def _order_action_before_expiry() -> None:
    _decide_first(
        mandate,
        "_head",
        lambda m, *, now, action: (
            problem(ProblemCode.ACTION_NOT_ALLOWED)
            if m.allowed_actions is not None and action not in m.allowed_actions
            else _ORIGINAL
        ),
    )


def _scope_with(**overrides: Any) -> Callable[[Any], Any]:
    def make(scope: Any) -> Any:
        def mutated(m: Any, **kwargs: Any) -> Problem | None:
            changes = {key: value(m) for key, value in overrides.items() if key != "organizations"}
            if "organizations" in overrides:
                kwargs["organizations"] = {m.organization_id}
            result: Problem | None = scope(_copy(m, **changes), **kwargs)
            return result

        return mutated

    return make


def _organization_scope_skipped() -> None:
    _wrap(mandate, "_scope", _scope_with(organizations=None))


def _empty_service_list_allows_all() -> None:
    _wrap(mandate, "_scope", _scope_with(service_ids=lambda m: m.service_ids or None))


def _empty_schedule_list_allows_all() -> None:
    _wrap(mandate, "_scope", _scope_with(schedule_ids=lambda m: m.schedule_ids or None))


def _empty_provider_list_allows_all() -> None:
    _wrap(mandate, "_scope", _scope_with(provider_ids=lambda m: m.provider_ids or None))


def _without_id_accepted() -> None:
    _wrap(mandate, "_well_formed", lambda well_formed: lambda m: well_formed(_copy(m, id=m.id or "mnd_any")))


def _expiry_offset_dropped() -> None:
    # The offset is cut off and the wall-clock part read as UTC ("…T10:00:00-05:00" becomes "…T10:00:00Z").
    def dropped(value: str | None) -> str | None:
        return re.sub(r"[+-]\d{2}:\d{2}$", "Z", value) if value else value

    _wrap(
        mandate,
        "_head",
        lambda head: (
            lambda m, *, now, action: head(_copy(m, expires_at=dropped(m.expires_at)), now=now, action=action)
        ),
    )


def _schedule_scope_skipped() -> None:
    _wrap(mandate, "_scope", _scope_with(schedule_ids=lambda m: None))


def _provider_scope_skipped() -> None:
    _wrap(mandate, "_scope", _scope_with(provider_ids=lambda m: None))


def _provider_unknown_as_not_allowed() -> None:
    _then(
        mandate,
        "_scope",
        lambda found, *_, **__: (
            problem(ProblemCode.PROVIDER_NOT_ALLOWED)
            if found is not None and found.code == ProblemCode.PROVIDER_UNKNOWN
            else found
        ),
    )


def _earliest_start_exclusive() -> None:
    _decide_first(
        mandate,
        "_too_early",
        lambda m, local, start, earliest: (
            problem(ProblemCode.SLOT_TOO_EARLY) if start <= earliest else _ORIGINAL
        ),
    )


def _earliest_start_minute_early() -> None:
    _wrap(
        mandate,
        "_too_early",
        lambda too_early: lambda m, local, start, earliest: too_early(m, local, start, earliest - _MINUTE),
    )


def _latest_end_exclusive() -> None:
    _then(
        mandate,
        "_window",
        lambda found, m, slot: (
            problem(ProblemCode.SLOT_TOO_LATE)
            if found is None and slot.ends_at_local == _shift(m.latest_end, dt.timedelta())
            else found
        ),
    )


def _latest_end_minute_late() -> None:
    _wrap(
        mandate,
        "_window",
        lambda window: (
            lambda m, slot: window(_copy(m, latest_end=_shift(m.latest_end, _MINUTE) or m.latest_end), slot)
        ),
    )


def _quoted_amount(slot: Any, service: Any) -> int | None:
    quoted = slot.price or service.price
    return fixed_amount(quoted) if quoted is not None else None


def _price_cap_exclusive() -> None:
    _decide_first(
        mandate,
        "_price",
        lambda m, slot, service: (
            problem(ProblemCode.PRICE_EXCEEDS_MANDATE)
            if m.max_price is not None and _quoted_amount(slot, service) == m.max_price.amount_minor
            else _ORIGINAL
        ),
    )


def _price_cap_one_unit_over() -> None:
    def make(price: Any) -> Any:
        def mutated(m: Any, slot: Any, service: Any) -> Problem | None:
            cap = m.max_price
            looser = (
                _copy(cap, amount_minor=cap.amount_minor + 1) if cap and cap.amount_minor is not None else cap
            )
            result: Problem | None = price(_copy(m, max_price=looser), slot, service)
            return result

        return mutated

    _wrap(mandate, "_price", make)


def _cap_compared_in_cents(scale: Callable[[int, int], int], cap_scale: Callable[[int, int], int]) -> None:
    """The price cap compared after both amounts were normalized to cents (hundredths of the major unit)."""

    def decide(m: Any, slot: Any, service: Any) -> Any:
        quoted, cap = slot.price or service.price, m.max_price
        amount = _quoted_amount(slot, service)
        if amount is None or cap is None or cap.amount_minor is None or quoted.currency != cap.currency:
            return _ORIGINAL
        exponent = minor_unit_exponent(cap.currency)
        if exponent is None:
            return _ORIGINAL
        over = scale(amount, exponent) > cap_scale(cap.amount_minor, exponent)
        return problem(ProblemCode.PRICE_EXCEEDS_MANDATE) if over else None

    _decide_first(mandate, "_price", decide)


def _to_cents(amount: int, exponent: int) -> int:
    # Rounded half up where the currency has more decimals than cents (12.499 KWD is 1250 cents).
    unit = int(10**exponent)
    return (amount * 100 + unit // 2) // unit


def _cap_rounded_to_cents() -> None:
    _cap_compared_in_cents(_to_cents, _to_cents)


def _cap_assumes_two_decimals() -> None:
    # The price is normalized through its currency's exponent, the cap as if it were already in cents.
    _cap_compared_in_cents(_to_cents, lambda amount, exponent: amount)


def _fee_cap_skipped() -> None:
    _wrap(
        mandate,
        "_payment",
        lambda payment: (
            lambda m, slot, service, policy: payment(_copy(m, max_extra_fee=None), slot, service, policy)
        ),
    )


def _currency_mismatch_skipped() -> None:
    def make(price: Any) -> Any:
        def mutated(m: Any, slot: Any, service: Any) -> Problem | None:
            quoted = slot.price or service.price
            cap = m.max_price
            if quoted is not None and cap is not None:
                m = _copy(m, max_price=_copy(cap, currency=quoted.currency))
                slot, service = _copy(slot, price=quoted), _copy(service, price=quoted)
            result: Problem | None = price(m, slot, service)
            return result

        return mutated

    _wrap(mandate, "_price", make)


def _non_fixed_price_accepted() -> None:
    non_fixed = ("insurance_dependent", "quote_required")
    _decide_first(
        mandate,
        "_price",
        lambda m, slot, service: (
            None if getattr(slot.price or service.price, "type", None) in non_fixed else _ORIGINAL
        ),
    )


def _payment_passing(requirements: set[str]) -> None:
    _decide_first(
        mandate,
        "_payment",
        lambda m, slot, service, policy: None if policy.payment_requirement in requirements else _ORIGINAL,
    )


def _consultation_skipped() -> None:
    _wrap(
        booking,
        "validate_mandate",
        lambda validate: (
            lambda m, *, service, **kwargs: validate(
                m, service=_copy(service, requires_consultation=False), **kwargs
            )
        ),
    )


def _order_price_before_window() -> None:
    def reordered(
        m: Any, *, slot: Any, service: Any, policy: Any, now: dt.datetime, action: str = "booking.create"
    ) -> Problem | None:
        return (
            mandate._head(m, now=now, action=action)
            or mandate._slot_scope(m, slot, policy)
            or mandate._price(m, slot, service)
            or mandate._window(m, slot)
            or (problem(ProblemCode.REQUIRES_CONSULTATION_HANDOFF) if service.requires_consultation else None)
            or mandate._payment(m, slot, service, policy)
        )

    _replace(booking, "validate_mandate", reordered)


# --- Approval tokens, idempotency and replays ------------------------------------------------------------


def _token_hash_of(key: Callable[[BookingCreateInput], Any]) -> None:
    # Only the approval gate's view of the payload changes; the idempotency store keeps the real hash.
    _replace(approval, "booking_payload_hash", lambda inp: sha256_hex(key(inp)))


def _token_not_bound_to_payload() -> None:
    # Bound to nothing: the gate only asks whether the token exists, is unspent and is unexpired.
    _token_hash_of(lambda inp: "any booking")


def _token_not_bound_to_key() -> None:
    _token_hash_of(
        lambda inp: inp.model_dump(mode="json", exclude={"approval", "verification_code", "idempotency_key"})
    )


def _token_not_bound_to_summary() -> None:
    _replace(approval, "sha256_hex", lambda value: "one-summary-for-all")


def _token_bound_to_summary_without(pattern: str, keep: str = "") -> None:
    """The token is bound to the summary with one fact cut out: that fact may change under it."""

    def hashed(value: Any) -> str:
        return sha256_hex(re.sub(pattern, keep, value) if isinstance(value, str) else value)

    _replace(approval, "sha256_hex", hashed)


def _token_survives_fee_change() -> None:
    _token_bound_to_summary_without(
        r"(cancellation fee of|costs|No-show fee:) [^ ;]*?\d(?=[.;]?(?: |$))", r"\1"
    )


def _token_survives_window_change() -> None:
    _token_bound_to_summary_without(r"(up to|less than|deadline is) .*? before", r"\1")


def _token_survives_provider_rename() -> None:
    _token_bound_to_summary_without(r" with [^.]*? at ", " at ")


def _token_survives_location_rename() -> None:
    _token_bound_to_summary_without(r"( with [^.]*? at )[^,(.]+", r"\1")


def _free_booking_skips_approval() -> None:
    # "Nothing to pay, nothing to approve": a zero fixed price is placed without the final confirmation.
    free: dict[str, bool] = {}

    def summary(build: Any) -> Any:
        def built(service: Any, slot: Any, policy: Any, *args: Any, **kwargs: Any) -> Any:
            price = slot.price or service.price
            free["last"] = price is not None and fixed_amount(price) == 0
            return build(service, slot, policy, *args, **kwargs)

        return built

    evaluate = approval.ApprovalGate.aevaluate

    async def gate(self: Any, inp: BookingCreateInput, text: str, offer: str | None = None) -> Any:
        return approval.Approved("free") if free.get("last") else await evaluate(self, inp, text, offer)

    _wrap(booking, "build_approval_summary", summary)
    _replace(approval.ApprovalGate, "aevaluate", gate)


def _token_reusable_after_success() -> None:
    _token_not_bound_to_key()
    _replace(approval.ApprovalGate, "mark_spent", lambda self, token: None)


def _elicited_decline_books() -> None:
    # Any answer the host gives counts as the user's yes.
    _replace(confirmation, "_confirmed", lambda result: True)


def _token_reusable_after_expiry() -> None:
    _replace(approval, "duration_micros", lambda ttl: 10**18)


def _conflict_replays_first_receipt() -> None:
    # The idempotency record keyed by the key alone: another payload under it replays the first receipt.
    _replace(booking, "booking_payload_hash", lambda inp: sha256_hex(inp.idempotency_key))


def _hash_without(path: tuple[str, ...]) -> Callable[[BookingCreateInput], str]:
    """The payload hash with one (nested) field left out, as a hand-picked field list would."""

    def hashed(inp: BookingCreateInput) -> str:
        transient = {"approval", "verification_code"}
        wire = {key: value for key, value in inp.to_wire().items() if key not in transient}
        *parents, leaf = path
        owner = wire
        for parent in parents:
            owner = owner.setdefault(parent, {})
        owner.pop(leaf, None)
        return sha256_hex(wire)

    return hashed


def _idempotency_hash_ignores(*path: str) -> None:
    # Only the idempotency record's view of the payload changes; the approval gate keeps the real hash.
    _replace(booking, "booking_payload_hash", _hash_without(path))


def _payload_hash_ignores(*path: str) -> None:
    # The one payload hash both the idempotency record and the approval token are bound to.
    hashed = _hash_without(path)
    _replace(booking, "booking_payload_hash", hashed)
    _replace(approval, "booking_payload_hash", hashed)


def _on_replay(again: Callable[[Any, BookingCreateInput, Receipt], Any]) -> None:
    create = booking.BookingPipeline.create

    async def mutated(self: Any, inp: BookingCreateInput) -> Any:
        result = await create(self, inp)
        if isinstance(result, Success) and result.runtime == LOCAL_CACHE_REPLAY:
            return await again(self, inp, result.value)
        return result

    _replace(booking.BookingPipeline, "create", mutated)


async def _place_again(pipeline: Any, inp: BookingCreateInput) -> Any:
    start = check_requested_wall_clock(inp.date, inp.time)
    assert isinstance(start, str)
    return await pipeline._adapter.place_booking(
        BookingRequest(inp, start), merchant_visible_name(inp.customer) or ""
    )


def _replay_calls_platform() -> None:
    async def again(pipeline: Any, inp: BookingCreateInput, receipt: Receipt) -> Any:
        await _place_again(pipeline, inp)  # the platform replays its own idempotent answer: same booking
        return Success(receipt, runtime=LOCAL_CACHE_REPLAY)

    _on_replay(again)


def _replay_returns_new_booking() -> None:
    async def again(pipeline: Any, inp: BookingCreateInput, receipt: Receipt) -> Any:
        fresh = await _place_again(pipeline, _copy(inp, idempotency_key=inp.idempotency_key + "-again"))
        if isinstance(fresh, Problem):
            return Success(receipt, runtime=LOCAL_CACHE_REPLAY)
        return Success(_copy(receipt, booking_id=fresh.id), runtime=LOCAL_CACHE_REPLAY)

    _on_replay(again)


# --- Idempotency under contention and after a lost answer -------------------------------------------------


def _live_lease_taken_over() -> None:
    # Every holder looks crashed, so a copy takes the key over while the first call is still placing.
    _replace(idempotency, "_provably_dead", lambda owner: True)


def _in_progress_at_once() -> None:
    # The bounded wait for the holder is skipped: the copy gives up on the first look.
    def claim(self: Any, key: str, payload_hash: str, scope: str = idempotency.LEGACY_SCOPE) -> Any:
        return InProgress(idempotency._in_progress("Another call with this idempotency_key is in progress"))

    _replace(idempotency.IdempotencyStore, "claim", claim)


def _in_progress_final() -> None:
    # "Another call holds this key" without the retryable flag: the agent takes it as the answer.
    in_progress = idempotency._in_progress

    def final(what: str) -> Problem:
        return in_progress(what).model_copy(update={"retryable": False})

    _replace(idempotency, "_in_progress", final)


def _resume_books_again() -> None:
    # The resumed create goes under a platform key of its own, so the platform books it afresh.
    resume = booking.BookingPipeline._resume

    async def mutated(self: Any, inp: BookingCreateInput, claim: Any, placing: Placing, attempt: Any) -> Any:
        again = Placing(
            placing.token_hash, {**placing.context, "platform_key": f"{inp.idempotency_key}-again"}
        )
        return await resume(self, inp, claim, again, attempt)

    _replace(booking.BookingPipeline, "_resume", mutated)


def _peek_forgets(kind: type) -> None:
    # The look before the mandate's pre-check does not see this kind of record (the claim still does).
    peek = idempotency.IdempotencyStore.apeek

    async def mutated(self: Any, key: str, payload_hash: str, scope: str = idempotency.LEGACY_SCOPE) -> Any:
        found = await peek(self, key, payload_hash, scope)
        return None if isinstance(found, kind) else found

    _replace(idempotency.IdempotencyStore, "apeek", mutated)


def _lost_answer_forgotten() -> None:
    release = idempotency.IdempotencyStore.release

    def mutated(self: Any, lease: Any, *, outcome_known: bool = True) -> None:
        release(self, lease, outcome_known=True)

    _replace(idempotency.IdempotencyStore, "release", mutated)


# --- The approval summary, one element dropped -----------------------------------------------------------


def _summary_without(pattern: str) -> None:
    def make(build: Any) -> Any:
        return lambda *args, **kwargs: re.sub(pattern, "", build(*args, **kwargs))

    _wrap(booking, "build_approval_summary", make)


def _summary_without_provider() -> None:
    _wrap(
        approval,
        "_where",
        lambda where: lambda slot, policy: where(_copy(slot, provider_name=None, provider_id=None), policy),
    )


def _summary_without_time() -> None:
    _wrap(
        approval,
        "_when",
        lambda when: (
            lambda slot, policy: re.sub(r" at \d{2}:\d{2} until \d{2}:\d{2}", "", when(slot, policy))
        ),
    )


def _summary_without_zone() -> None:
    _wrap(
        approval, "_when", lambda when: lambda slot, policy: re.sub(r" \([^()]*\)$", "", when(slot, policy))
    )


def _summary_without_price() -> None:
    _summary_without(r"Price: .*?\. (?=[A-Z])")


def _summary_without_payment() -> None:
    _wrap(approval, "_payment_sentence", lambda sentence: lambda policy, price: "")


def _summary_without_cancellation_terms() -> None:
    _wrap(approval, "_cancellation_sentences", lambda sentences: lambda policy: [])


def _summary_without_customer_name() -> None:
    _wrap(approval, "_name_sentences", lambda sentences: lambda customer, name: [])


# --- Falsehoods in the summary's prose (graded against the oracle) -----------------------------------------

_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _summary_claims_fee_cap() -> None:
    _wrap(
        approval,
        "_cancellation_sentences",
        lambda sentences: (
            lambda policy: [
                *sentences(policy),
                "Cancellation and no-show fees are capped by your booking mandate.",
            ]
        ),
    )


def _summary_claims_slot_held() -> None:
    def make(build: Any) -> Any:
        return lambda *a, **k: build(*a, **k) + " This slot is held for you for ten minutes while you decide."

    _wrap(booking, "build_approval_summary", make)


def _next_weekday(match: re.Match[str]) -> str:
    return _WEEKDAYS[(_WEEKDAYS.index(match.group(0)) + 1) % 7]


def _summary_wrong_weekday() -> None:
    weekdays = re.compile("|".join(_WEEKDAYS))
    _wrap(
        approval, "_when", lambda when: lambda slot, policy: weekdays.sub(_next_weekday, when(slot, policy))
    )


def _summary_price_divided_by_100() -> None:
    # Every currency written as if it had two decimals: "¥120.00" for 12000 yen, "KWD 125.00" for 12.500.
    signs = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥"}

    def make(text: Any) -> Any:
        def mutated(money: Any) -> str:
            amount = fixed_amount(money) if money is not None else None
            if amount is None:
                result: str = text(money)
                return result
            sign = signs.get(money.currency, f"{money.currency} ")
            return f"{sign}{amount / 100:,.2f}"

        return mutated

    _wrap(approval, "_price_text", make)


def _summary_claims_free_cancellation() -> None:
    _wrap(
        approval,
        "_cancellation_sentence",
        lambda sentence: lambda policy: "Free cancellation with the merchant at any time.",
    )


# --- The envelope ---------------------------------------------------------------------------------------


def _null_for_absent_fields() -> None:
    def wire(value: Any) -> Any:
        if hasattr(value, "model_dump"):
            return value.model_dump(mode="json")
        if isinstance(value, list):
            return [wire(item) for item in value]
        return value

    _replace(dispatch, "_wire", wire)


# --- Paths the battery drives end to end: verify, an unreachable platform, the replay marker, audit ------


def _verify_always_verified() -> None:
    async def verify(self: Any, inp: VerificationVerifyInput) -> Any:
        return Success(VerificationChallenge(verified=True, method="sms", purpose=inp.purpose or ""))

    _replace(core.OsbpCore, "verify_code", verify)


def _status_snapshot_unmarked() -> None:
    get_booking = core.OsbpCore.get_booking

    async def mutated(self: Any, inp: Any) -> Any:
        result = await get_booking(self, inp)
        if isinstance(result, Success) and result.runtime == core.SNAPSHOT_FALLBACK:
            return Success(result.value)  # the creation snapshot, presented as current platform state
        return result

    _replace(core.OsbpCore, "get_booking", mutated)


def _create_runtime(adjust: Callable[[Any], Any]) -> None:
    create = booking.BookingPipeline.create

    async def mutated(self: Any, inp: BookingCreateInput) -> Any:
        result = await create(self, inp)
        return adjust(result) if isinstance(result, Success) else result

    _replace(booking.BookingPipeline, "create", mutated)


def _fresh_create_marked_as_replay() -> None:
    _create_runtime(lambda result: Success(result.value, runtime=result.runtime or LOCAL_CACHE_REPLAY))


def _replay_unmarked() -> None:
    _create_runtime(lambda result: Success(result.value) if result.runtime == LOCAL_CACHE_REPLAY else result)


def _page_skips_a_start() -> None:
    """The next-page notice names a start one minute after the first slot not shown: that start is lost."""

    def adjust(found: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(found, availability.AvailabilityPage) and found.next_start is not None:
            return dataclasses.replace(found, next_start=_shift(found.next_start, _MINUTE))
        return found

    _then(core, "page_slots", adjust)


def _paging_ignores_earliest_start() -> None:
    """The core pages from the day's first slot whatever earliest_start says."""

    def make(original: Any) -> Any:
        def mutated(slots: Any, *, earliest_start: str | None, limit: int | None) -> Any:
            return original(slots, earliest_start=None, limit=limit)

        return mutated

    _wrap(core, "page_slots", make)


def _paging_earliest_start_exclusive() -> None:
    """earliest_start compared with ``>``: the slots starting exactly at it are left out."""

    def make(original: Any) -> Any:
        def mutated(slots: Any, *, earliest_start: str | None, limit: int | None) -> Any:
            if earliest_start is not None:
                slots = [slot for slot in slots if slot.starts_at_local != earliest_start]
            return original(slots, earliest_start=earliest_start, limit=limit)

        return mutated

    _wrap(core, "page_slots", make)


def _audit_tokens_in_clear() -> None:
    # The redactor no longer knows approval tokens: the key is kept, the retry instruction left as is.
    _replace(redaction, "_TOKEN_PREFIX", "\x00 no token marker \x00")
    _wrap(
        redaction.Redactor,
        "allows",
        lambda allows: lambda self, parent, key: key == "token" or allows(self, parent, key),
    )


def _audit_hashes_over_unredacted() -> None:
    snapshot = audit.AuditLog._snapshot

    def mutated(self: Any, draft: Any) -> Any:
        made = snapshot(self, draft)
        hashes = {"input_hash": sha256_hex(draft.input), "result_hash": sha256_hex(draft.result)}
        return audit._Snapshot(made.fields | hashes, made.canonical)

    _replace(audit.AuditLog, "_snapshot", mutated)


_READS = frozenset({"service.describe", "availability.find", "policy.explain", "booking.status"})


def _audit_reads_unrecorded() -> None:
    aappend = audit.AuditLog.aappend

    async def mutated(self: Any, draft: Any, *, durable: bool = True) -> None:
        if draft.tool_name not in _READS:
            await aappend(self, draft, durable=durable)

    _replace(audit.AuditLog, "aappend", mutated)


#: Every core mutant by name: what to install in the server process before it starts.
CORE_MUTANTS: dict[str, Callable[[], None]] = {
    "mandate_expiry_skipped": _expiry_skipped,
    "mandate_action_skipped": _action_skipped,
    "mandate_order_action_before_expiry": _order_action_before_expiry,
    "mandate_organization_scope_skipped": _organization_scope_skipped,
    "mandate_empty_service_list_allows_all": _empty_service_list_allows_all,
    "mandate_schedule_scope_skipped": _schedule_scope_skipped,
    "mandate_empty_schedule_list_allows_all": _empty_schedule_list_allows_all,
    "mandate_empty_provider_list_allows_all": _empty_provider_list_allows_all,
    "mandate_without_id_accepted": _without_id_accepted,
    "mandate_expiry_offset_dropped": _expiry_offset_dropped,
    "mandate_cap_rounded_to_cents": _cap_rounded_to_cents,
    "mandate_cap_assumes_two_decimals": _cap_assumes_two_decimals,
    "mandate_fee_cap_skipped": _fee_cap_skipped,
    "mandate_provider_scope_skipped": _provider_scope_skipped,
    "mandate_provider_unknown_as_not_allowed": _provider_unknown_as_not_allowed,
    "mandate_earliest_start_exclusive": _earliest_start_exclusive,
    "mandate_earliest_start_minute_early": _earliest_start_minute_early,
    "mandate_latest_end_exclusive": _latest_end_exclusive,
    "mandate_latest_end_minute_late": _latest_end_minute_late,
    "mandate_price_cap_exclusive": _price_cap_exclusive,
    "mandate_price_cap_one_unit_over": _price_cap_one_unit_over,
    "mandate_currency_mismatch_skipped": _currency_mismatch_skipped,
    "mandate_non_fixed_price_accepted": _non_fixed_price_accepted,
    "mandate_unknown_payment_accepted": lambda: _payment_passing({"unknown"}),
    "mandate_payment_handoff_skipped": lambda: _payment_passing({"deposit", "full_prepay"}),
    "mandate_consultation_skipped": _consultation_skipped,
    "mandate_order_price_before_window": _order_price_before_window,
    "token_not_bound_to_payload": _token_not_bound_to_payload,
    "token_not_bound_to_key": _token_not_bound_to_key,
    "token_not_bound_to_summary": _token_not_bound_to_summary,
    "token_survives_fee_change": _token_survives_fee_change,
    "token_survives_window_change": _token_survives_window_change,
    "token_survives_provider_rename": _token_survives_provider_rename,
    "token_survives_location_rename": _token_survives_location_rename,
    "token_reusable_after_success": _token_reusable_after_success,
    "elicited_decline_books": _elicited_decline_books,
    "free_booking_skips_approval": _free_booking_skips_approval,
    "token_reusable_after_expiry": _token_reusable_after_expiry,
    "idempotency_conflict_replays_first_receipt": _conflict_replays_first_receipt,
    "replay_calls_platform": _replay_calls_platform,
    "idempotency_hash_ignores_provider": lambda: _idempotency_hash_ignores("provider_id"),
    "idempotency_hash_ignores_phone": lambda: _idempotency_hash_ignores("customer", "phone"),
    "idempotency_hash_ignores_email": lambda: _idempotency_hash_ignores("customer", "email"),
    "token_binding_ignores_mandate_cap": lambda: _payload_hash_ignores("mandate", "max_price"),
    "token_binding_ignores_customer_email": lambda: _payload_hash_ignores("customer", "email"),
    "replay_returns_new_booking": _replay_returns_new_booking,
    "idempotency_live_lease_taken_over": _live_lease_taken_over,
    "idempotency_in_progress_at_once": _in_progress_at_once,
    "idempotency_in_progress_final": _in_progress_final,
    "idempotency_resume_books_again": _resume_books_again,
    "idempotency_replay_rechecks_mandate": lambda: _peek_forgets(Replay),
    "idempotency_resume_rechecks_mandate": lambda: _peek_forgets(Placing),
    "idempotency_lost_answer_forgotten": _lost_answer_forgotten,
    "summary_without_provider": _summary_without_provider,
    "summary_without_time": _summary_without_time,
    "summary_without_zone": _summary_without_zone,
    "summary_without_price": _summary_without_price,
    "summary_without_payment": _summary_without_payment,
    "summary_without_cancellation_terms": _summary_without_cancellation_terms,
    "summary_without_customer_name": _summary_without_customer_name,
    "envelope_null_for_absent_fields": _null_for_absent_fields,
    "summary_claims_fee_cap": _summary_claims_fee_cap,
    "summary_claims_slot_held": _summary_claims_slot_held,
    "summary_wrong_weekday": _summary_wrong_weekday,
    "summary_price_divided_by_100": _summary_price_divided_by_100,
    "summary_claims_free_cancellation": _summary_claims_free_cancellation,
    "verify_always_verified": _verify_always_verified,
    "status_snapshot_unmarked": _status_snapshot_unmarked,
    "fresh_create_marked_as_replay": _fresh_create_marked_as_replay,
    "replay_unmarked": _replay_unmarked,
    "audit_tokens_in_clear": _audit_tokens_in_clear,
    "audit_hashes_over_unredacted": _audit_hashes_over_unredacted,
    "audit_reads_unrecorded": _audit_reads_unrecorded,
    "paging_skips_a_start": _page_skips_a_start,
    "paging_ignores_earliest_start": _paging_ignores_earliest_start,
    "paging_earliest_start_exclusive": _paging_earliest_start_exclusive,
}


def install(name: str) -> None:
    """Install the core mutant ``name`` in this process (raises ``KeyError`` for an unknown name)."""
    CORE_MUTANTS[name]()
