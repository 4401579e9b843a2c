"""Mutants of the rules the protocol core owns, made at runtime inside the mutant's own server process.

Each entry wraps or replaces one function of :mod:`osbp.protocol` (or of the server's envelope) by
assigning a module attribute before the server starts: the checked-in source is never edited, and only
the process started by ``python -m tests.conformance.mutants.serve NAME`` runs the mutant. The functions
wrapped are the ones the core looks up by module global at call time (``osbp.protocol.mandate._head`` and
its siblings, ``osbp.protocol.booking.validate_mandate``, the approval module's helpers), so one
assignment changes exactly one rule.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any

from osbp.protocol import approval, booking, core, mandate
from osbp.protocol.approval import merchant_visible_name
from osbp.protocol.canonical import sha256_hex
from osbp.protocol.contract import Success
from osbp.protocol.idempotency import LOCAL_CACHE_REPLAY
from osbp.protocol.mandate import check_requested_wall_clock
from osbp.protocol.models import (
    BookingCreateInput,
    Problem,
    Receipt,
    VerificationChallenge,
    VerificationVerifyInput,
)
from osbp.protocol.money import fixed_amount
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
    "token_reusable_after_success": _token_reusable_after_success,
    "elicited_decline_books": _elicited_decline_books,
    "token_reusable_after_expiry": _token_reusable_after_expiry,
    "idempotency_conflict_replays_first_receipt": _conflict_replays_first_receipt,
    "replay_calls_platform": _replay_calls_platform,
    "replay_returns_new_booking": _replay_returns_new_booking,
    "summary_without_provider": _summary_without_provider,
    "summary_without_time": _summary_without_time,
    "summary_without_zone": _summary_without_zone,
    "summary_without_price": _summary_without_price,
    "summary_without_payment": _summary_without_payment,
    "summary_without_cancellation_terms": _summary_without_cancellation_terms,
    "summary_without_customer_name": _summary_without_customer_name,
    "envelope_null_for_absent_fields": _null_for_absent_fields,
    "verify_always_verified": _verify_always_verified,
    "status_snapshot_unmarked": _status_snapshot_unmarked,
    "fresh_create_marked_as_replay": _fresh_create_marked_as_replay,
    "replay_unmarked": _replay_unmarked,
    "audit_tokens_in_clear": _audit_tokens_in_clear,
    "audit_hashes_over_unredacted": _audit_hashes_over_unredacted,
    "audit_reads_unrecorded": _audit_reads_unrecorded,
}


def install(name: str) -> None:
    """Install the core mutant ``name`` in this process (raises ``KeyError`` for an unknown name)."""
    CORE_MUTANTS[name]()
