"""The mutant set: each mutant's one defect, how it is made, and the checks that must catch it.

A mutant is *killed* when at least one battery check fails and a failing check's id names the mutant's
rule: it equals, or starts with, one of ``kills``. ``awaits`` names the check a mutant is waiting for when
today's battery cannot see its defect (the issue's stronger checks); such a mutant is reported as a
survivor, and the matrix test fails as soon as it is killed so that the note is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["MUTANTS", "MUTANTS_BY_NAME", "Mutant", "Via"]

#: How the defect is made: a runtime wrap of a core function in the mutant's own process, an
#: ``--adapter`` plug-in, a rewriting upstream transport (inside the same plug-in), or a stdio proxy.
Via = Literal["core", "adapter", "transport", "proxy"]


@dataclass(frozen=True, slots=True)
class Mutant:
    """One mutant server."""

    name: str
    via: Via
    defect: str
    kills: tuple[str, ...]
    awaits: str = ""

    def named_by(self, check_id: str) -> bool:
        """Whether a failure of ``check_id`` names this mutant's rule."""
        return any(check_id.startswith(prefix) for prefix in self.kills)


def _m(name: str, via: Via, defect: str, *kills: str, awaits: str = "") -> Mutant:
    return Mutant(name, via, defect, kills, awaits)


_ORDER = "mandate.order"  # the pairwise "which code wins" checks
_SUMMARY = "approval.summary"

MUTANTS: tuple[Mutant, ...] = (
    # Mandate rules, each off by one or skipped.
    _m("mandate_expiry_skipped", "core", "an expired mandate still authorizes", "mandate.expired"),
    _m("mandate_action_skipped", "core", "allowed_actions is not checked", "mandate.action_not_allowed"),
    _m(
        "mandate_organization_scope_skipped",
        "core",
        "the mandate's organization is not compared",
        "mandate.organization_scope",
    ),
    _m(
        "mandate_empty_service_list_allows_all",
        "core",
        "an empty service_ids list allows every service",
        "mandate.service_scope",
    ),
    _m("mandate_schedule_scope_skipped", "core", "schedule_ids is not checked", "mandate.schedule_scope"),
    _m(
        "mandate_empty_schedule_list_allows_all",
        "core",
        "an empty schedule_ids list allows every schedule",
        "mandate.schedule_scope",
    ),
    _m(
        "mandate_empty_provider_list_allows_all",
        "core",
        "an empty provider_ids list allows every provider",
        "mandate.provider_not_allowed",
    ),
    _m("mandate_without_id_accepted", "core", "a mandate without an id is accepted", "mandate.missing_id"),
    _m(
        "mandate_expiry_offset_dropped",
        "core",
        "expires_at's UTC offset is dropped and its wall-clock part read as UTC",
        "mandate.expires_offset",
    ),
    _m(
        "mandate_cap_rounded_to_cents",
        "core",
        "the price cap is compared after rounding both amounts to cents (12.500 KWD fits under 12.499)",
        "boundary.price_cap_kwd",
    ),
    _m(
        "mandate_cap_assumes_two_decimals",
        "core",
        "the cap is read as cents whatever its currency's exponent (a yen cap is a hundredth of its price)",
        "boundary.price_cap_jpy",
        "boundary.price_cap_kwd",
    ),
    _m(
        "mandate_fee_cap_skipped",
        "core",
        "max_extra_fee is not compared: allow_policy_fee alone lets any deposit through",
        "mandate.policy_fee_over_cap",
    ),
    _m(
        "mandate_provider_scope_skipped",
        "core",
        "provider_ids is not checked",
        "mandate.provider_not_allowed",
    ),
    _m(
        "mandate_provider_unknown_as_not_allowed",
        "core",
        "a missing provider is reported as provider_not_allowed",
        "mandate.provider_unknown",
    ),
    _m(
        "mandate_earliest_start_exclusive",
        "core",
        "a slot starting exactly at earliest_start is refused",
        "boundary.window_exact_books",
    ),
    _m(
        "mandate_earliest_start_minute_early",
        "core",
        "a slot may start one minute before earliest_start",
        "mandate.slot_too_early",
    ),
    _m(
        "mandate_latest_end_exclusive",
        "core",
        "a slot ending exactly at latest_end is refused",
        "boundary.window_exact_books",
    ),
    _m(
        "mandate_latest_end_minute_late",
        "core",
        "a slot may end one minute after latest_end",
        "boundary.window_minus_minute_refuses",
    ),
    _m(
        "mandate_price_cap_exclusive",
        "core",
        "a price equal to max_price is refused",
        "boundary.price_equal_cap_books",
    ),
    _m(
        "mandate_price_cap_one_unit_over",
        "core",
        "a price one minor unit above max_price passes",
        "boundary.price_cap_minus_one_refuses",
    ),
    _m(
        "mandate_currency_mismatch_skipped",
        "core",
        "a price in another currency is compared as if it were the cap's",
        "mandate.currency_mismatch",
    ),
    _m(
        "mandate_non_fixed_price_accepted",
        "core",
        "insurance-dependent and quote-required prices pass the cap",
        "mandate.insurance_dependent",
        "mandate.quote_required",
    ),
    _m(
        "mandate_unknown_payment_accepted",
        "core",
        "an unknown payment requirement passes",
        "mandate.unknown_payment",
    ),
    _m(
        "mandate_payment_handoff_skipped",
        "core",
        "a deposit or full prepayment books without allow_policy_fee",
        "mandate.deposit",
        "mandate.full_prepay",
    ),
    _m(
        "mandate_consultation_skipped",
        "core",
        "a consultation service books without a handoff",
        "mandate.consultation",
    ),
    _m(
        "mandate_order_action_before_expiry",
        "core",
        "allowed_actions is checked before expiry",
        _ORDER,
    ),
    _m(
        "mandate_order_price_before_window",
        "core",
        "the price cap is checked before the time window",
        _ORDER,
    ),
    # The approval token.
    _m(
        "token_not_bound_to_payload",
        "core",
        "any unspent token approves any payload (under the same key the idempotency record refuses first)",
        "approval.token_payload_bound",
        "approval.token_key_bound",
    ),
    _m(
        "token_not_bound_to_key",
        "core",
        "the approval token is bound to the payload without its idempotency key",
        "approval.token_key_bound",
    ),
    _m(
        "token_not_bound_to_summary",
        "core",
        "the approval token survives a change of the summary the user saw",
        "approval.token_summary_bound",
    ),
    _m(
        "token_survives_fee_change",
        "core",
        "the token is bound to the summary without its fee amounts: a changed fee is booked unseen",
        "approval.token_summary_cancellation_fee",
        "approval.token_summary_no_show_fee",
    ),
    _m(
        "token_survives_window_change",
        "core",
        "the token is bound to the summary without its cancellation deadline",
        "approval.token_summary_window",
    ),
    _m(
        "token_survives_provider_rename",
        "core",
        "the token is bound to the summary without the provider's name (the id still binds it)",
        "approval.token_summary_provider",
    ),
    _m(
        "token_survives_location_rename",
        "core",
        "the token is bound to the summary without the location's name (the id still binds it)",
        "approval.token_summary_location",
    ),
    _m(
        "token_reusable_after_success",
        "core",
        "a spent token approves the same booking again under a new key",
        "approval.token_spent",
    ),
    _m(
        "free_booking_skips_approval",
        "core",
        "a zero-price booking is placed without the approval step",
        "approval.free_service_gated",
    ),
    _m(
        "elicited_decline_books",
        "core",
        "a confirmation the user declines through the host books anyway",
        "elicitation.decline_books_nothing",
    ),
    _m(
        "token_reusable_after_expiry",
        "core",
        "approval tokens never expire",
        "approval.token_expired",
    ),
    # Idempotency.
    _m(
        "idempotency_conflict_replays_first_receipt",
        "core",
        "another payload under a used key replays the first receipt",
        "idempotency.conflict",
    ),
    _m(
        "idempotency_hash_ignores_provider",
        "core",
        "the idempotency record's payload hash leaves out provider_id: another provider replays the receipt",
        "idempotency.conflict_ids",
    ),
    _m(
        "idempotency_hash_ignores_phone",
        "core",
        "the idempotency record's payload hash leaves out the customer's phone",
        "idempotency.conflict_customer",
    ),
    _m(
        "idempotency_hash_ignores_email",
        "core",
        "the idempotency record's payload hash leaves out the customer's email",
        "idempotency.conflict_customer",
    ),
    _m(
        "token_binding_ignores_mandate_cap",
        "core",
        "the payload hash binding token and key leaves out max_price: the old token approves a raised cap",
        "approval.token_bound_mandate",
        "idempotency.conflict_mandate",
    ),
    _m(
        "token_binding_ignores_customer_email",
        "core",
        "the payload hash binding token and key leaves out the email: the old token books another contact",
        "approval.token_bound_customer",
        "idempotency.conflict_customer",
    ),
    _m(
        "replay_calls_platform",
        "core",
        "an idempotent replay sends the create to the platform again",
        "idempotency.replay",
    ),
    _m(
        "replay_returns_new_booking",
        "core",
        "an idempotent replay books again and returns the new booking",
        "idempotency.replay",
    ),
    # Idempotency under contention and after a lost answer (concurrency_checks.py).
    _m(
        "idempotency_live_lease_taken_over",
        "core",
        "a copy of an approved create takes over the key while the first is in flight: the platform gets"
        " a create per copy",
        "idempotency.concurrent_once",
    ),
    _m(
        "idempotency_in_progress_at_once",
        "core",
        "a copy of an approved create that finds the key held answers idempotency_in_progress at once"
        " instead of waiting for the first",
        "idempotency.concurrent_waits",
    ),
    _m(
        "idempotency_in_progress_final",
        "core",
        "a copy waiting on an approved create that the platform refused answers idempotency_in_progress as"
        " final (not retryable)",
        "idempotency.concurrent_failed",
    ),
    _m(
        "idempotency_resume_books_again",
        "core",
        "the retry of a create whose answer was lost sends a new create (a new platform key): a second"
        " appointment",
        # Both resumed checks grade the one rule (a resumed create books once), before and after expiry.
        "idempotency.resumed_once",
        "idempotency.resumed_after_expiry",
    ),
    _m(
        "idempotency_replay_rechecks_mandate",
        "core",
        "a settled key's replay checks the mandate again first: mandate_expired after the expiry",
        "idempotency.replay_after_expiry",
    ),
    _m(
        "idempotency_resume_rechecks_mandate",
        "core",
        "the retry of a create whose answer was lost checks the mandate again first: mandate_expired after"
        " the expiry although the platform holds the booking",
        "idempotency.resumed_after_expiry",
    ),
    _m(
        "idempotency_lost_answer_forgotten",
        "core",
        "a create whose answer was lost hands its key back as if nothing was booked: its retry is a new"
        " attempt, refused mandate_expired after the expiry",
        "idempotency.resumed_after_expiry",
    ),
    # Verification.
    _m(
        "adapter_verification_code_invented",
        "adapter",
        "the adapter sends a hard-coded code when the customer gave none",
        "verification.",
    ),
    _m(
        "transport_verification_code_dropped",
        "transport",
        "the customer's verification code never reaches the platform",
        "verification.",
    ),
    _m(
        "adapter_wrong_code_accepted",
        "adapter",
        "a rejected code is retried with the sandbox code, so a wrong code books",
        "verification.",
    ),
    # Translation of the platform's facts.
    _m("adapter_price_scaled_by_100", "adapter", "minor units scaled by 100", "money."),
    _m("adapter_kwd_two_decimals", "adapter", "KWD treated as a two-decimal currency", "money.kwd"),
    _m(
        "adapter_status_collapsed_to_booked",
        "adapter",
        "every native status is reported as booked",
        "status.",
        "happy.status",
    ),
    _m(
        "adapter_fixed_standard_offset",
        "adapter",
        "instants use a fixed UTC-05:00 instead of the zone's rules",
        "time.",
    ),
    _m(
        "adapter_fixed_daylight_offset",
        "adapter",
        "instants use a fixed UTC-04:00 (right in summer only)",
        "time.",
    ),
    _m(
        "adapter_slot_taken_as_outage",
        "adapter",
        "a slot taken at create time is reported as upstream_unavailable",
        "runtime.slot_taken",
    ),
    _m(
        "transport_rate_limit_as_outage",
        "transport",
        "a platform 429 is read as a 503",
        "runtime.rate_limited",
    ),
    _m(
        "adapter_problem_carries_upstream_body",
        "adapter",
        "a Problem message carries the platform's raw response body",
        "envelope.problem_message_prose",
    ),
    # The approval summary, one required element dropped.
    _m(
        "summary_without_provider",
        "core",
        "the summary omits the provider",
        _SUMMARY,
        "summary.provider",
    ),
    _m("summary_without_time", "core", "the summary omits the merchant-local time", _SUMMARY, "summary.date"),
    _m(
        "summary_without_zone",
        "core",
        "the summary omits the time zone",
        _SUMMARY,
        "summary.timezone",
    ),
    _m("summary_without_price", "core", "the summary omits the price", _SUMMARY, "summary.price"),
    _m(
        "summary_without_payment",
        "core",
        "the summary omits the payment requirement (deposit, prepayment)",
        _SUMMARY,
        "summary.payment",
    ),
    _m(
        "summary_without_cancellation_terms",
        "core",
        "the summary omits the cancellation terms and fees",
        _SUMMARY,
        "summary.fees",
    ),
    _m(
        "summary_without_customer_name",
        "core",
        "the summary omits the merchant-visible customer name",
        _SUMMARY,
        "summary.customer_name",
    ),
    # The wire.
    _m(
        "envelope_null_for_absent_fields",
        "core",
        "absent optional fields are emitted as null",
        "money.non_fixed_omits_amount",
        "money.well_formed",
    ),
    _m(
        "proxy_structured_differs_from_text",
        "proxy",
        "structuredContent is not the text's JSON (no audit_event_id)",
        "envelope.structured_equals_text",
    ),
    _m("proxy_is_error_never_set", "proxy", "isError is false on failures", "envelope.is_error_matches_ok"),
    _m("proxy_annotation_wrong", "proxy", "verification.send is annotated read-only", "wire.annotations"),
    _m("proxy_stdout_banner", "proxy", "a start-up banner on stdout", "wire.stdout_clean"),
    # Graded against the oracle (fixture format 2): facts, prose falsehoods, DST gap and fold, paging.
    _m(
        "summary_claims_fee_cap",
        "core",
        "the summary says the fees are capped by the mandate",
        "prose.fee_cap_claim",
    ),
    _m(
        "summary_claims_slot_held",
        "core",
        "the summary says the slot is held for ten minutes",
        "prose.hold_claim",
    ),
    _m(
        "summary_wrong_weekday",
        "core",
        "the summary names the wrong weekday beside the date",
        "prose.weekday",
    ),
    _m(
        "summary_price_divided_by_100",
        "core",
        "the summary writes every currency with two decimals (¥120.00 for 12000 JPY)",
        "prose.price_text",
    ),
    _m(
        "summary_claims_free_cancellation",
        "core",
        "the summary says cancellation is free at any time although a cancellation fee applies",
        "prose.policy_supported",
    ),
    _m(
        "adapter_consultation_flag_dropped",
        "adapter",
        "a consultation service is described as bookable without one",
        "oracle.service_facts",
    ),
    _m(
        "adapter_display_divided_by_100",
        "adapter",
        "display divides every currency by 100 (¥120.00 for 12000 JPY)",
        "oracle.price_display",
    ),
    _m(
        "adapter_cancellation_fee_dropped",
        "adapter",
        "a cancellation fee is dropped from both policy.explain and the summary",
        "summary.fees_oracle",
        "oracle.policy_facts",
    ),
    _m(
        "adapter_hours_shifted_one_weekday",
        "adapter",
        "opening hours are shifted by one weekday",
        "oracle.opening_hours",
    ),
    _m(
        "adapter_gap_midnight_offset",
        "adapter",
        "instants use the offset of the day's midnight (a slot after a spring-forward gap an hour late)",
        "time.dst_gap_slots",
    ),
    _m(
        "adapter_fold_later_instant",
        "adapter",
        "a repeated fall-back wall-clock time resolves to its later instant",
        "time.dst_fold",
    ),
    _m(
        "paging_skips_a_start",
        "core",
        "the next-page notice skips the first start time not shown",
        "availability.paging",
        "availability.page_boundary",
    ),
    _m(
        "adapter_unknown_status_as_booked",
        "adapter",
        "a native status OSBP does not know is reported as booked",
        "status.native_unknown",
    ),
    # Paths driven end to end, and the audit log read after the run.
    _m(
        "verify_always_verified",
        "core",
        "verification.verify answers verified: true for any code",
        "verification.verify",
    ),
    _m(
        "status_snapshot_unmarked",
        "core",
        "booking.status of an unreachable platform presents the creation snapshot as current state",
        "status.unreachable_not_current",
    ),
    _m(
        "fresh_create_marked_as_replay",
        "core",
        "a create that booked says it was replayed without calling the platform",
        "idempotency.fresh_create_unmarked",
    ),
    _m("replay_unmarked", "core", "an idempotent replay omits osbp_runtime", "idempotency.replay_marked"),
    _m(
        "audit_tokens_in_clear",
        "core",
        "the audit log keeps approval tokens in clear",
        "audit.redacted",
    ),
    _m(
        "audit_hashes_over_unredacted",
        "core",
        "input_hash and result_hash are computed over the unredacted snapshots",
        "audit.hashes",
    ),
    _m(
        "audit_reads_unrecorded",
        "core",
        "reads answer an audit_event_id but write no record",
        "audit.record_per_call",
    ),
    _m(
        "paging_ignores_earliest_start",
        "core",
        "availability.find ignores earliest_start (every page is the day's first)",
        "availability.paging",
        "availability.earliest_start",
        "availability.page_boundary",
    ),
    _m(
        "paging_earliest_start_exclusive",
        "core",
        "earliest_start leaves out the slots starting exactly at it (each next page loses its first start)",
        "availability.paging",
        "availability.earliest_start",
        "availability.page_boundary",
    ),
)

#: The mutants keyed by name.
MUTANTS_BY_NAME: dict[str, Mutant] = {mutant.name: mutant for mutant in MUTANTS}
