"""The check catalog: every requirement the battery grades, with a stable id and its spec section.

Ids are stable across releases (tools and CI key on them); requirements are one line; the section names
the heading of the OSBP v0.1.0 specification the rule comes from. Checks marked "beyond the spec" grade
what an agent host needs from a safe server although the specification does not spell it out.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CATALOG", "CHECKS_BY_ID", "Check"]


@dataclass(frozen=True, slots=True)
class Check:
    """One graded requirement."""

    id: str
    requirement: str
    section: str


def _c(check_id: str, requirement: str, section: str) -> Check:
    return Check(check_id, requirement, section)


_MANDATE = "Mandate Enforcement"
_SUMMARY = "booking.create"

#: Every check in the order the battery reports them.
CATALOG: tuple[Check, ...] = (
    # The wire: what an MCP host sees before any OSBP semantics.
    _c(
        "wire.initialize",
        "the server starts over stdio and completes the MCP initialize handshake",
        "Transport",
    ),
    _c("wire.tools_listed", "the eight OSBP tools are listed under their flattened MCP names", "Naming"),
    _c(
        "wire.input_shapes",
        "each tool's input schema takes the published flat arguments, requiring none the spec calls optional",
        "Tool Set",
    ),
    _c(
        "wire.annotations",
        "every tool carries explicit annotations consistent with its effect",
        "Tool Set (beyond the spec)",
    ),
    _c(
        "wire.stdout_clean",
        "the server writes nothing but protocol messages to stdout",
        "Transport (beyond the spec)",
    ),
    # The result envelope, graded over every call the battery made.
    _c(
        "envelope.success_fields",
        "every success is exactly {ok: true, value, audit_event_id} plus optional osbp_runtime",
        "Result Envelope",
    ),
    _c(
        "envelope.failure_fields",
        "every failure is exactly {ok: false, problem, audit_event_id} plus optional osbp_runtime",
        "Result Envelope",
    ),
    _c(
        "envelope.problem_fields",
        "a Problem carries a code and a message (retryable optional, boolean) and nothing else",
        "Result Envelope",
    ),
    _c(
        "envelope.structured_equals_text",
        "every result's structuredContent equals the JSON of its text content",
        "Transport (beyond the spec)",
    ),
    _c(
        "envelope.is_error_matches_ok",
        "isError is true exactly when the envelope's ok is false",
        "Result Envelope (beyond the spec)",
    ),
    _c(
        "envelope.audit_event_id_unique",
        "every result carries an audit_event_id, unique per call",
        "Audit (beyond the spec)",
    ),
    _c("envelope.snake_case_keys", "every key in every result is snake_case", "Core Objects"),
    _c(
        "envelope.problem_message_prose",
        "every Problem message is prose, never a raw platform answer (no embedded JSON object)",
        "Result Envelope",
    ),
    _c(
        "envelope.schema_invalid",
        "a schema-invalid call answers the failure envelope {ok: false, problem} with isError true, as text"
        " and structuredContent, without echoing the rejected value",
        "Result Envelope",
    ),
    # Shapes of the read tools.
    _c(
        "availability.fixture_slot",
        "availability.find offers the fixture slot with its merchant-local start and end",
        "availability.find",
    ),
    _c(
        "shapes.slot_context",
        "a Slot carries create-ready ids, its denormalized names and timezone, and coordinates where the"
        " location has them",
        "availability.find",
    ),
    _c(
        "shapes.durations_iso8601",
        "Service, option and policy durations are ISO 8601 durations (the slot service's equals the fixture)",
        "Time Discipline",
    ),
    _c(
        "shapes.operating_hours",
        "operating hours use ISO weekdays 1-7 and HH:MM wall-clock open and close",
        "Time Discipline",
    ),
    _c(
        "shapes.policy",
        "policy.explain reports each service's payment requirement, verification method, organization block",
        "policy.explain",
    ),
    # Money.
    _c(
        "money.usd_minor_units",
        "the fixed USD price is an integer amount_minor in cents (e.g. 9500)",
        "Money",
    ),
    _c("money.eur_minor_units", "the fixed EUR price is an integer amount_minor in cents", "Money"),
    _c("money.gbp_minor_units", "the fixed GBP price is an integer amount_minor in pence", "Money"),
    _c(
        "money.jpy_minor_units",
        "the fixed JPY price uses exponent 0 (12000 yen is 12000, not cents)",
        "Money",
    ),
    _c("money.kwd_minor_units", "the fixed KWD price uses exponent 3 (12.500 KWD is 12500)", "Money"),
    _c(
        "money.non_fixed_omits_amount",
        "insurance-dependent and quote-required prices carry their type and currency and omit amount_minor",
        "Money",
    ),
    _c(
        "money.well_formed",
        "every Money has an ISO 4217 currency, an integer amount_minor >= 0 exactly when fixed, a known type",
        "Money",
    ),
    # Time discipline, graded over every slot and booking seen.
    _c(
        "time.instants_have_offset",
        "starts_at and ends_at instants carry Z or an explicit offset",
        "Time Discipline",
    ),
    _c(
        "time.wall_clock_naked",
        "starts_at_local and ends_at_local are merchant wall-clock strings with no offset",
        "Time Discipline",
    ),
    _c(
        "time.instant_matches_wall_clock",
        "each instant is the merchant wall-clock converted through schedule_timezone",
        "Time Discipline",
    ),
    _c(
        "time.dst_rules",
        "slot instants follow the zone's real rules on dates both sides of each DST transition of the slot's"
        " year",
        "Time Discipline",
    ),
    # The happy path and the final-confirmation gate.
    _c(
        "approval.challenge",
        'a valid first booking.create returns retryable requires_user_confirmation with approval.token="…"',
        "booking.create",
    ),
    _c(
        "approval.free_service_gated",
        "a free (zero-price) service still answers the approval challenge first, and books on the approved"
        " retry",
        "booking.create",
    ),
    _c(
        "approval.summary",
        "the approval summary names the service, the merchant-local time and the price with its currency",
        "booking.create",
    ),
    # The approval summary, element by element, against the facts the server itself reported.
    _c(
        "summary.date",
        "the approval summary states the slot's merchant-local date",
        _SUMMARY,
    ),
    _c(
        "summary.timezone",
        "the approval summary names the schedule's IANA timezone beside the merchant-local time",
        _SUMMARY,
    ),
    _c(
        "summary.provider",
        "the approval summary names the provider as availability.find reported it",
        _SUMMARY,
    ),
    _c(
        "summary.location",
        "the approval summary names the location (schedule) as availability.find reported it",
        _SUMMARY,
    ),
    _c(
        "summary.fees",
        "the approval summary states every cancellation and no-show fee policy.explain surfaces",
        "policy.explain",
    ),
    _c(
        "summary.payment",
        "the approval summary states the payment requirement: none, the deposit amount, or full prepayment",
        _SUMMARY,
    ),
    _c(
        "summary.customer_name",
        "the approval summary shows the merchant-visible customer name",
        _SUMMARY,
    ),
    # More summary facts, the summaries' prose over the run, and the token under a fresh key
    # (osbp.conformance.summary_facts).
    _c(
        "summary.end_time",
        "the approval summary states when the appointment ends (its merchant-local end or its length)",
        "booking.create (beyond the spec)",
    ),
    _c(
        "summary.merchant",
        "the approval summary names the merchant (policy.explain's organization name)",
        "booking.create (beyond the spec)",
    ),
    _c(
        "summary.cancellation",
        "the approval summary says whether the booking can be cancelled as policy.explain's "
        "cancellation_enabled does, never calling a reported answer unreported",
        "policy.explain",
    ),
    _c(
        "summary.policy_terms",
        "the approval summary states the cancellation window, the late grace and the cancellation note "
        "policy.explain reports (the token is bound to the policy text)",
        _SUMMARY,
    ),
    _c(
        "summary.end_date",
        "the summary of a slot ending on the next day states the end's date",
        "booking.create (beyond the spec)",
    ),
    _c(
        "summary.schedule_timezone",
        "the summary of a slot at a schedule in another zone than the organization's names that zone",
        "Time Discipline",
    ),
    _c(
        "summary.fees_uncapped",
        "a summary stating a cancellation or no-show fee says the booking mandate does not cap it",
        "Security and Privacy Considerations (beyond the spec)",
    ),
    _c(
        "summary.name_fields",
        "a summary states each given_name and family_name the payload sends, never that one is not sent",
        _SUMMARY,
    ),
    _c(
        "prose.null_placeholder",
        "no approval summary shows a program's null (None, null, undefined) where a value belongs",
        "booking.create (beyond the spec)",
    ),
    _c(
        "prose.unit_number",
        "in every approval summary a duration's unit agrees with its count (1 hour, 10 minutes)",
        "booking.create (beyond the spec)",
    ),
    _c(
        "approval.token_expired_current",
        "an expired token's fresh challenge states the facts as they are now (a price changed since)",
        _SUMMARY,
    ),
    _c(
        "approval.token_invented",
        "an approval token no challenge issued gets a fresh challenge, never a booking or a server error",
        _SUMMARY,
    ),
    _c(
        "approval.token_other_booking",
        "one booking's token sent with another booking under a fresh key is re-challenged with a summary "
        "of that other booking",
        _SUMMARY,
    ),
    _c(
        "happy.receipt",
        "the approved retry books and returns a receipt with id, booking_id and human-readable text",
        "booking.create",
    ),
    _c(
        "happy.status",
        "booking.status returns the booking with a protocol status and the booked ids and wall-clock",
        "booking.status",
    ),
    _c(
        "idempotency.replay",
        "the same key and payload replay the same receipt, with or without the spent approval",
        _MANDATE,
    ),
    _c(
        "idempotency.replay_offline",
        "a replayed booking.create does not reach the platform (no appointment-create request is received)",
        "booking.create",
    ),
    _c(
        "idempotency.conflict",
        "the same key with a different payload fails with idempotency_conflict",
        _MANDATE,
    ),
    _c(
        "approval.token_payload_bound",
        "an approval token is refused for a changed payload under the same key",
        "booking.create (beyond the spec)",
    ),
    _c(
        "approval.token_key_bound",
        "an approval token is refused for the same payload under another idempotency key",
        "booking.create (beyond the spec)",
    ),
    # Binding on every payload field, one at a time (binding_checks.py).
    _c(
        "approval.token_bound_ids",
        "an approval token approves nothing under its key once service_id, schedule_id or provider_id"
        " changed",
        "booking.create",
    ),
    _c(
        "approval.token_bound_slot",
        "an approval token approves nothing under its key once the date or time changed",
        "booking.create",
    ),
    _c(
        "approval.token_bound_customer",
        "an approval token approves nothing under its key once any customer field changed (name, phone,"
        " email, given or family name)",
        "booking.create",
    ),
    _c(
        "approval.token_bound_mandate",
        "an approval token approves nothing under its key once any mandate field changed (id, expiry,"
        " actions, scope lists, window, caps, allow_policy_fee)",
        "booking.create",
    ),
    _c(
        "idempotency.conflict_ids",
        "a settled key with another service_id, schedule_id or provider_id fails with idempotency_conflict",
        _MANDATE,
    ),
    _c(
        "idempotency.conflict_slot",
        "a settled key with another date or time fails with idempotency_conflict",
        _MANDATE,
    ),
    _c(
        "idempotency.conflict_customer",
        "a settled key with any customer field changed (name, phone, email, given or family name) fails"
        " with idempotency_conflict",
        _MANDATE,
    ),
    _c(
        "idempotency.conflict_mandate",
        "a settled key with any mandate field changed fails with idempotency_conflict",
        _MANDATE,
    ),
    _c(
        "approval.token_summary_bound",
        "an approval token is refused once the price it was shown with changed: the retry is re-challenged"
        " with a fresh summary showing the new price",
        "booking.create",
    ),
    _c(
        "approval.token_summary_cancellation_fee",
        "an approval token is refused once the cancellation fee it was shown with changed: the retry is"
        " re-challenged with a fresh summary showing the new fee",
        "booking.create",
    ),
    _c(
        "approval.token_summary_no_show_fee",
        "an approval token is refused once the no-show fee it was shown with changed: the retry is"
        " re-challenged with a fresh summary showing the new fee",
        "booking.create",
    ),
    _c(
        "approval.token_summary_window",
        "an approval token is refused once the cancellation window it was shown with changed: the retry is"
        " re-challenged with a fresh summary showing the new window",
        "booking.create",
    ),
    _c(
        "approval.token_summary_provider",
        "an approval token is refused once the provider was renamed: the retry is re-challenged with a fresh"
        " summary showing the new name",
        "booking.create",
    ),
    _c(
        "approval.token_summary_location",
        "an approval token is refused once the location was renamed: the retry is re-challenged with a fresh"
        " summary showing the new name",
        "booking.create",
    ),
    _c(
        "approval.token_expired",
        "an approval token older than the server's token lifetime is refused with a fresh challenge",
        "booking.create",
    ),
    _c(
        "approval.token_spent",
        "an approval token authorizes nothing new after its booking succeeded",
        "booking.create (beyond the spec)",
    ),
    # Final confirmation through the host (MCP elicitation): SKIP for a server that keeps the token path.
    _c(
        "elicitation.accept_books_once",
        "a confirmation the user accepts through the host books once; its retry replays without asking again",
        "Security and Privacy Considerations (beyond the spec)",
    ),
    _c(
        "elicitation.decline_books_nothing",
        "a confirmation the user declines through the host books nothing and is not retryable",
        "Security and Privacy Considerations (beyond the spec)",
    ),
    _c(
        "elicitation.summary_bound",
        "the user is asked through the host to confirm the summary the token path shows for that booking",
        "Security and Privacy Considerations (beyond the spec)",
    ),
    # The mandate fail-closed matrix: the exact code on the first create call.
    _c(
        "mandate.missing_id",
        "a mandate without an id (absent or empty) fails with invalid_mandate",
        "Mandate Enforcement",
    ),
    _c("mandate.expired", "an expired mandate fails with mandate_expired", _MANDATE),
    _c(
        "mandate.expires_offset",
        "expires_at with an offset other than Z is the instant it names: two hours ahead at -05:00 holds,"
        " two hours past at +05:00 fails with mandate_expired",
        "BookingMandate",
    ),
    _c(
        "mandate.naked_expires_at",
        "an expires_at without Z or offset fails with invalid_mandate",
        "BookingMandate",
    ),
    _c(
        "mandate.wall_clock_offset",
        "an offset on earliest_start, latest_end or booking.create's time fails with invalid_mandate",
        "Time Discipline",
    ),
    _c(
        "mandate.action_not_allowed",
        "a mandate without booking.create in allowed_actions fails with action_not_allowed",
        _MANDATE,
    ),
    _c("mandate.organization_scope", "another organization fails with organization_not_allowed", _MANDATE),
    _c(
        "mandate.service_scope",
        "a service outside service_ids (or an empty list) fails with service_not_allowed",
        _MANDATE,
    ),
    _c(
        "mandate.schedule_scope",
        "a schedule outside schedule_ids (or an empty list) fails with schedule_not_allowed",
        _MANDATE,
    ),
    _c(
        "mandate.provider_unknown",
        "an empty provider_id under provider_ids fails with provider_unknown",
        _MANDATE,
    ),
    _c(
        "mandate.provider_not_allowed",
        "a provider outside provider_ids (or an empty list) fails with provider_not_allowed",
        _MANDATE,
    ),
    _c("mandate.slot_too_early", "a slot starting before earliest_start fails with slot_too_early", _MANDATE),
    _c("mandate.slot_too_late", "a slot ending after latest_end fails with slot_too_late", _MANDATE),
    _c("mandate.price_over_cap", "a price above max_price fails with price_exceeds_mandate", _MANDATE),
    _c(
        "mandate.currency_mismatch",
        "EUR and GBP prices against a USD cap fail with currency_mismatch",
        "Money",
    ),
    _c(
        "mandate.unknown_payment",
        "an unknown payment requirement fails with non-retryable requires_user_confirmation and no token",
        "policy.explain",
    ),
    _c(
        "mandate.insurance_dependent",
        "an insurance-dependent price fails with non-retryable requires_user_confirmation and no token",
        "Money",
    ),
    _c(
        "mandate.quote_required",
        "a quote-required price fails with non-retryable requires_user_confirmation and no token",
        "Money",
    ),
    _c(
        "mandate.deposit",
        "a required deposit without allow_policy_fee fails with requires_payment_handoff",
        _MANDATE,
    ),
    _c(
        "mandate.full_prepay",
        "a required full prepayment without allow_policy_fee fails with requires_payment_handoff",
        _MANDATE,
    ),
    _c(
        "mandate.policy_fee_over_cap",
        "with allow_policy_fee, a deposit one minor unit above max_extra_fee (below max_price) fails with"
        " policy_fee_exceeds_mandate; an equal one reaches the challenge",
        _MANDATE,
    ),
    _c(
        "mandate.consultation",
        "a consultation service fails with requires_consultation_handoff",
        _MANDATE,
    ),
    _c(
        "mandate.policy_fee_currency",
        "with allow_policy_fee, a deposit in another currency than max_extra_fee fails with"
        " currency_mismatch",
        _MANDATE,
    ),
    _c(
        "mandate.cap_unfixed",
        "a max_price or max_extra_fee without a fixed amount_minor fails with invalid_mandate",
        _MANDATE,
    ),
    _c(
        "boundary.fee_cap_absent_holds",
        "a mandate without max_extra_fee still holds: a fixed-price booking, and a deposit under"
        " allow_policy_fee, reach the approval challenge",
        _MANDATE,
    ),
    _c(
        "mandate.payment_handoff_kind",
        "requires_payment_handoff never claims full payment for a deposit, nor a deposit for a full"
        " prepayment",
        "Mandate Enforcement (beyond the spec)",
    ),
    _c(
        "booking.unknown_schedule_refused",
        "a schedule_id the platform does not know, under a mandate without schedule_ids, is refused: no"
        " challenge and no internal_adapter_error",
        "booking.create",
    ),
    _c(
        "mandate.order",
        "when a payload breaks two mandate rules, the rule earlier in the spec's order decides the code"
        " (every adjacent pair)",
        _MANDATE,
    ),
    # Boundaries are inclusive.
    _c(
        "boundary.price_equal_cap_books",
        "a price exactly at max_price books",
        "Mandate Enforcement (beyond the spec)",
    ),
    _c(
        "boundary.price_cap_minus_one_refuses",
        "a max_price one minor unit below the price fails with price_exceeds_mandate",
        "Mandate Enforcement (beyond the spec)",
    ),
    _c(
        "boundary.price_cap_jpy",
        "in JPY (exponent 0) a cap equal to the price books and one yen below fails with"
        " price_exceeds_mandate",
        "Mandate Enforcement (beyond the spec)",
    ),
    _c(
        "boundary.price_cap_kwd",
        "in KWD (exponent 3) a cap equal to the price books and one fils below fails with"
        " price_exceeds_mandate",
        "Mandate Enforcement (beyond the spec)",
    ),
    _c(
        "boundary.window_exact_books",
        "a slot filling the mandate window exactly (start = earliest_start, end = latest_end) books",
        "Mandate Enforcement (beyond the spec)",
    ),
    _c(
        "boundary.window_minus_minute_refuses",
        "a latest_end one minute before the slot's end fails with slot_too_late",
        "Mandate Enforcement (beyond the spec)",
    ),
    # Verification.
    _c(
        "verification.required_after_approval",
        "a verification-required service returns retryable requires_verification after approval",
        "booking.create",
    ),
    _c(
        "verification.send",
        "verification.send answers sent: true with the method and the booking:{organization_id} purpose",
        "verification.send",
    ),
    _c(
        "verification.wrong_code_refused",
        "a retry with a wrong verification code does not book and fails with verification_failed",
        "booking.create",
    ),
    _c(
        "verification.code_books",
        "the retry with the customer's code (same key and approval) books",
        "booking.create",
    ),
    # Runtime branches armed on the platform.
    _c(
        "runtime.slot_taken", "a slot taken at create time fails with retryable slot_taken", "Result Envelope"
    ),
    _c("runtime.rate_limited", "a platform HTTP 429 fails with retryable rate_limited", "Result Envelope"),
    # The remaining read tools.
    _c(
        "status.native_mapping",
        "booking.status maps every native status the fixtures name to its protocol status",
        "booking.status",
    ),
    _c(
        "status.booking_not_found",
        "booking.status of an unknown booking fails with booking_not_found",
        "Result Envelope",
    ),
    _c(
        "handoff.requires_human",
        "handoff.request answers status requires_human echoing reason, message and mandate_id",
        "handoff.request",
    ),
    # The oracle (fixture format 2): facts graded against the fixture file, never the server's other answers.
    _c(
        "oracle.service_facts",
        "service.describe states each fixture service's name, duration, price (amount, currency, type),"
        " consultation flag and each stated option (name, duration, price) as the oracle does",
        "service.describe",
    ),
    _c(
        "oracle.price_display",
        "every price, deposit and fee display string equals the oracle's for its currency (¥12,000, not"
        " ¥120.00)",
        "Money",
    ),
    _c(
        "oracle.policy_facts",
        "policy.explain states each fixture service's payment requirement, deposit, cancellation and no-show"
        " fees, cancellation window, late grace and verification as the oracle does",
        "policy.explain",
    ),
    _c(
        "oracle.opening_hours",
        "schedule_hours equal the oracle's opening hours per ISO weekday",
        "Time Discipline",
    ),
    _c(
        "oracle.schedule_place",
        "each schedule's slots carry the oracle's schedule_name and one-line schedule_address",
        "Core Objects",
    ),
    _c(
        "time.dst_gap_slots",
        "around a spring-forward gap the offered slots are the oracle's at exactly its instants, none at a"
        " skipped wall-clock time",
        "Time Discipline",
    ),
    _c(
        "time.dst_fold_slots",
        "in a fall-back fold each wall-clock start is offered once per provider, at exactly the oracle's"
        " instant",
        "Time Discipline",
    ),
    _c(
        "time.dst_fold_booking",
        "the oracle's fold slot books through the approval step and booking.status reports its exact"
        " instants",
        "Time Discipline",
    ),
    _c(
        "availability.paging",
        "paging a full day with limit and earliest_start loses, repeats and splits no slot (the oracle's"
        " count)",
        "availability.find (beyond the spec)",
    ),
    _c(
        "status.native_unknown",
        "booking.status answers unknown for a native status OSBP does not know",
        "booking.status",
    ),
    _c(
        "summary.fees_oracle",
        "the approval summary states each fee the oracle gives the service, with its amount",
        _SUMMARY,
    ),
    _c(
        "prose.weekday",
        "a weekday named beside a date in a summary or receipt is that date's weekday",
        "booking.create (beyond the spec)",
    ),
    _c(
        "prose.price_text",
        "every amount a summary or receipt writes is one of the oracle's for that service, in its currency",
        "Money",
    ),
    _c(
        "prose.fee_cap_claim",
        "no summary or receipt claims the mandate caps or limits the cancellation or no-show fees",
        "Mandate Enforcement",
    ),
    _c(
        "prose.hold_claim",
        "no approval summary claims the slot is held or reserved before booking",
        "booking.create (beyond the spec)",
    ),
    _c(
        "prose.policy_supported",
        "no cancellation or fee statement the oracle's policy does not support (free cancellation under a"
        " fee)",
        "policy.explain",
    ),
    # Paths driven end to end: pre-verification, an unreachable platform, the replay marker.
    _c(
        "verification.verify_wrong_code_refused",
        "verification.verify after verification.send never verifies a wrong code",
        "verification.verify",
    ),
    _c(
        "verification.verify_code",
        "verification.verify answers the customer's code as the fixtures' pre_verification says: verified "
        "with method and purpose, or the tool refused",
        "verification.verify",
    ),
    _c(
        "status.unreachable_not_current",
        "booking.status while the platform is unreachable fails retryable or answers a snapshot marked "
        "not current in osbp_runtime.message",
        "booking.status",
    ),
    _c(
        "status.reachable_current",
        "booking.status once the platform is reachable again answers current platform state, without "
        "osbp_runtime",
        "booking.status",
    ),
    _c(
        "idempotency.fresh_create_unmarked",
        "a booking.create that books carries no osbp_runtime.idempotency replay marker",
        "Result Envelope",
    ),
    _c(
        "idempotency.replay_marked",
        'an idempotent replay carries osbp_runtime.idempotency "local_cache_replay"',
        "Result Envelope (beyond the spec)",
    ),
    # The audit log, read after the run (--audit-log).
    _c(
        "audit.record_per_call",
        "the audit log holds one record per schema-valid call, under its envelope's audit_event_id",
        "Audit",
    ),
    _c(
        "audit.chain",
        "the audit log's hash chain verifies from its first line (prev_hash links, hash of each record)",
        "Audit (beyond the spec)",
    ),
    _c(
        "audit.redacted",
        "no customer name, phone, email, verification code or approval token the run used appears in the "
        "audit log",
        "Audit",
    ),
    _c(
        "audit.hashes",
        "input_hash and result_hash are SHA-256 of the RFC 8785 canonical redacted input and result",
        "Audit",
    ),
    # Impossible dates and times (February 30, 25:00) in a request.
    _c(
        "input.impossible_date",
        "availability.find and booking.create with an impossible date (February 30) are refused with a"
        " non-retryable Problem, not internal_adapter_error",
        "Time Discipline",
    ),
    _c(
        "input.impossible_time",
        "booking.create with an impossible time (25:00, 24:30) is refused with a non-retryable Problem, not"
        " internal_adapter_error",
        "Time Discipline",
    ),
    _c(
        "mandate.impossible_wall_clock",
        "a mandate earliest_start or expires_at on an impossible date (February 30) fails with"
        " invalid_mandate",
        "BookingMandate",
    ),
    # availability.find's paging extension, at the fixture slot (the fixture's facts, format 1).
    _c(
        "availability.earliest_start",
        "availability.find with earliest_start at the fixture slot's start offers that slot and none"
        " earlier; one minute later it leaves the slot out",
        "availability.find (beyond the spec)",
    ),
    _c(
        "availability.page_boundary",
        "one-slot pages from the start before the fixture slot, following each notice's earliest_start,"
        " reach the fixture slot exactly once, every page starting after the one before",
        "availability.find (beyond the spec)",
    ),
    # Idempotency under contention, after a lost answer, and after the mandate's expiry
    # (concurrency_checks.py; the scenario and stats hooks).
    _c(
        "idempotency.concurrent_once",
        "copies of one approved booking.create sent at once reach the platform's create once and make one"
        " appointment; each answers that booking or a retryable Problem, and a replay answers it too",
        _MANDATE,
    ),
    _c(
        "idempotency.concurrent_waits",
        "a copy of an approved booking.create sent while the first is in flight waits for it and answers"
        " the same booking",
        "Mandate Enforcement (beyond the spec)",
    ),
    _c(
        "idempotency.concurrent_refused",
        "another payload under a key whose approved create is in flight fails with idempotency_conflict",
        _MANDATE,
    ),
    _c(
        "idempotency.concurrent_failed",
        "copies of an approved booking.create whose platform create is refused start no platform attempt of"
        " their own: one create request, no appointment, the copies answer retryable",
        "Mandate Enforcement (beyond the spec)",
    ),
    _c(
        "idempotency.resumed_once",
        "a booking.create whose platform answer was lost is answered retryable, and its retry under the"
        " same key answers the one appointment the platform made",
        _MANDATE,
    ),
    _c(
        "idempotency.replay_after_expiry",
        "a settled booking.create replays its receipt after its mandate expired, with or without the spent"
        " approval",
        _MANDATE,
    ),
    _c(
        "idempotency.resumed_after_expiry",
        "the retry, after the mandate expired, of a booking.create the platform made but whose answer was"
        " lost answers that booking, not mandate_expired",
        _MANDATE,
    ),
)

#: The catalog keyed by id.
CHECKS_BY_ID: dict[str, Check] = {check.id: check for check in CATALOG}
