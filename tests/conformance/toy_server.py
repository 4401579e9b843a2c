"""A compact, correct toy OSBP stdio MCP server over an in-memory platform: scaffolding that proves the
conformance battery can pass, and, with `--break <name>`, that it can fail.

    python toy_server.py [--break NAME] [--arm-file PATH] [--stats-file PATH] [--status-file PATH]
                         [--catalog-file PATH] [--approval-ttl SECONDS]

The platform matches `conformance/fixture_files/osbp-reference.json`. `--arm-file` names a file whose
content (`slot_taken` or `rate_limited`), when present, fails the next approved create once and is removed:
the tests' scenario endpoint writes it; while a file beside it named `<arm file>.unreachable` exists, the
platform cannot be reached (booking.status answers the booking as created, marked not current).
`--stats-file` is where the toy counts the creates that reach its platform; `--status-file` is a JSON object
of native statuses by booking id (the tests' hooks read and write them); `--catalog-file` is a JSON object
of catalog changes (prices, fees and cancellation windows by service id, provider and location names by id;
see `arming.py`) that override the built-in ones, read on every call. `--approval-ttl` makes approval tokens
expire that many seconds after their challenge (default: never, as the fixtures name no lifetime). Broken
variants:

    no_mandate_check       books without validating the mandate (the approval gate still runs)
    jpy_cents              reports JPY prices x100, as if the currency had cents
    error_without_iserror  returns ok:false envelopes with isError false
    stdout_noise           prints a banner to stdout before serving
    plain_text_rejection   answers schema-invalid arguments with the SDK's plain-text error
    summary_without_<part> leaves one part out of the approval summary (see SUMMARY_PARTS)
    price_before_currency  compares the price amount before its currency
    replay_calls_platform  contacts the platform again on an idempotent replay
    wrong_code_accepted    books with any verification code
    fixed_offset           converts wall-clock to instants with a fixed UTC-04:00 offset, ignoring DST
    status_collapsed       reports every native status as booked
    token_not_bound_to_summary  accepts a token after a fact of its summary changed
    token_never_expires    accepts a token whatever its age
    verify_always_verified answers verification.verify with verified: true for any code
    snapshot_unmarked      answers booking.status during an outage without the not-current marker
    replay_unmarked        answers an idempotent replay without osbp_runtime
    page_skips_a_start     names, in a partial page's notice, a start one minute after the first not shown
    earliest_start_ignored answers availability.find from the day's first slot whatever earliest_start says

Deliberately self-contained (no import from the project or the battery), so it grades nothing by sharing
code with the grader.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import json
import secrets
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ValidationError

SUMMARY_PARTS = ("date", "timezone", "provider", "location", "currency", "payment", "fees", "customer_name")
BREAKS = (
    "no_mandate_check",
    "jpy_cents",
    "error_without_iserror",
    "stdout_noise",
    "plain_text_rejection",
    *(f"summary_without_{part}" for part in SUMMARY_PARTS),
    "price_before_currency",
    "replay_calls_platform",
    "wrong_code_accepted",
    "fixed_offset",
    "status_collapsed",
    "token_not_bound_to_summary",
    "token_never_expires",
    "verify_always_verified",
    "snapshot_unmarked",
    "replay_unmarked",
    "page_skips_a_start",
    "earliest_start_ignored",
)
#: How a replay and an outage snapshot say how they were produced (osbp_runtime).
REPLAYED = {"idempotency": "local_cache_replay", "message": "Replayed from local idempotency state."}
SNAPSHOT = {"message": "The platform is unreachable: this is the booking as created, not its current state."}
#: Native status -> protocol status (the fixtures' native_statuses).
NATIVE_STATUSES = {
    "confirmed": "booked",
    "pending": "pending",
    "cancelled": "cancelled",
    "no_show": "no_show",
    "completed": "completed",
}
ORG = {
    "id": "conformance_co",
    "name": "Conformance Co",
    "timezone": "America/New_York",
    "currency": "USD",
    "country": "US",
}
SCHEDULE = {"id": "conformance_main", "name": "Conformance Main", "latitude": 40.7033, "longitude": -74.017}
LOCATIONS = {"conformance_main": "Conformance Main", "conformance_annex": "Conformance Annex"}
PROVIDERS = {
    "conformance_provider_ada": "Ada Fixture",
    "conformance_provider_grace": "Grace Fixture",
    "conformance_provider_binding": "Bea Binding",
    "conformance_provider_renamed": "Rene Renamed",
}
EXPONENTS = {"USD": 2, "EUR": 2, "GBP": 2, "JPY": 0, "KWD": 3}
HOURS = [{"day": day, "open": "09:00", "close": "17:00"} for day in range(1, 6)]
STARTS = ("09:00", "10:30", "14:00")
SANDBOX_CODE = "123456"


@dataclass(frozen=True)
class Service:
    name: str
    amount: int | None  # minor units; None for a non-fixed price
    currency: str = "USD"
    kind: str = "fixed"
    payment: str = "none"
    deposit: int = 0
    consultation: bool = False
    verification: str = "none"
    cancellation_fee: int | None = None
    no_show_fee: int | None = None
    window_minutes: int = 360


SERVICES = {
    "conformance_fixed_usd": Service("Fixed price (USD)", 9500),
    "conformance_fixed_eur": Service("Fixed price (EUR)", 9000, "EUR"),
    "conformance_fixed_gbp": Service("Fixed price (GBP)", 8000, "GBP"),
    "conformance_fixed_jpy": Service("Fixed price (JPY)", 12000, "JPY"),
    "conformance_fixed_kwd": Service("Fixed price (KWD)", 12500, "KWD"),
    "conformance_insurance_dependent": Service("Insurance-dependent price", None, kind="insurance_dependent"),
    "conformance_quote_required": Service("Quote-required price", None, kind="quote_required"),
    "conformance_consultation": Service("Consultation", 0, consultation=True),
    "conformance_deposit": Service(
        "Deposit required", 9500, payment="deposit", deposit=2500, cancellation_fee=1000, no_show_fee=2000
    ),
    "conformance_full_prepay": Service("Full prepayment", 9500, payment="full_prepay"),
    "conformance_unknown_payment": Service("Unknown payment requirement", 9500, payment="unknown"),
    "conformance_verification": Service("SMS verification", 9500, verification="sms"),
    "conformance_repriced": Service("Repriced fixture", 9500),
    "conformance_free": Service("Free fixture", 0),
    "conformance_fees": Service("Fees fixture", 6000, cancellation_fee=1500, no_show_fee=3000),
    "conformance_binding_cancellation_fee": Service("Cancellation fee binding", 6000, cancellation_fee=1500),
    "conformance_binding_no_show_fee": Service("No-show fee binding", 6000, no_show_fee=2500),
    "conformance_binding_window": Service("Cancellation window binding", 6000),
    "conformance_binding_provider": Service("Provider binding", 6000),
    "conformance_binding_location": Service("Location binding", 6000),
}
DURATION = dt.timedelta(minutes=45)


class Fail(Exception):
    """A Problem to answer with (the toy keeps its control flow short)."""

    def __init__(self, code: str, message: str, retryable: bool | None = None) -> None:
        super().__init__(code)
        self.problem: dict[str, Any] = {"code": code, "message": message}
        if retryable is not None:
            self.problem["retryable"] = retryable


class Toy:
    def __init__(
        self,
        breaks: set[str],
        arm_file: Path | None,
        stats_file: Path | None = None,
        status_file: Path | None = None,
        catalog_file: Path | None = None,
        approval_ttl: float | None = None,
    ) -> None:
        self.breaks, self.arm_file = breaks, arm_file
        self.stats_file, self.status_file, self.catalog_file = stats_file, status_file, catalog_file
        self.approval_ttl = approval_ttl
        with resources.files("tzdata.zoneinfo").joinpath("America", "New_York").open("rb") as data:
            self.tz = ZoneInfo.from_file(data, key="America/New_York")
        self.receipts: dict[str, tuple[str, dict[str, Any]]] = {}
        #: token -> (payload digest, summary shown, when issued on time.monotonic()).
        self.tokens: dict[str, tuple[str, str, float]] = {}
        self.bookings: dict[str, dict[str, Any]] = {}
        #: The osbp_runtime of the answer being built, if the work sets one.
        self.runtime: dict[str, str] | None = None

    # --- envelopes -------------------------------------------------------------------------------------
    def answer(self, body: dict[str, Any], *, audited: bool = True) -> CallToolResult:
        if audited:
            body["audit_event_id"] = f"aud_{secrets.token_hex(8)}"
        is_error = body["ok"] is False and "error_without_iserror" not in self.breaks
        text = json.dumps(body, separators=(",", ":"))
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=body, is_error=is_error
        )

    def reject(self, error: ValidationError) -> CallToolResult:
        # Never reached a handler: the failure envelope, fields and rules only, and nothing audited.
        fields = "; ".join(
            f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}"
            for item in error.errors(include_url=False, include_input=False)
        )
        problem = {"code": "invalid_input", "message": f"Invalid arguments: {fields}.", "retryable": False}
        return self.answer({"ok": False, "problem": problem}, audited=False)

    def run(self, work: Any) -> CallToolResult:
        self.runtime = None
        try:
            value = work()
            runtime: dict[str, Any] = {"osbp_runtime": self.runtime} if self.runtime else {}
            return self.answer({"ok": True, "value": value, **runtime})
        except Fail as failure:
            return self.answer({"ok": False, "problem": failure.problem})
        except ValueError:  # an impossible date or time (February 30, 25:00) of the right shape
            problem = {"code": "invalid_input", "message": "No such date or time.", "retryable": False}
            return self.answer({"ok": False, "problem": problem})

    # --- platform facts --------------------------------------------------------------------------------
    def service(self, service_id: str | None) -> Service:
        if service_id not in SERVICES:
            raise Fail("service_not_found", f"No service {service_id!r}.")
        changes = self.catalog().get("services", {}).get(service_id, {})
        return dataclasses.replace(SERVICES[service_id], **changes)

    def catalog(self) -> dict[str, Any]:
        """The catalog changes the tests' hooks recorded (see `arming.py`)."""
        if self.catalog_file is None or not self.catalog_file.exists():
            return {}
        changes: dict[str, Any] = json.loads(self.catalog_file.read_text(encoding="utf-8"))
        return changes

    def named(self, section: str, entity_id: str, names: dict[str, str]) -> str:
        """The current display name of a provider or location (a renamed one's new name)."""
        renamed: dict[str, str] = self.catalog().get(section, {})
        return renamed.get(entity_id) or names.get(entity_id, entity_id)

    def money(self, amount: int | None, currency: str, kind: str = "fixed") -> dict[str, Any]:
        if amount is None:
            return {"currency": currency, "type": kind}
        scale = 100 if currency == "JPY" and "jpy_cents" in self.breaks else 1
        return {"amount_minor": amount * scale, "currency": currency, "type": "fixed"}

    def display(self, service: Service) -> str:
        exponent = EXPONENTS[service.currency]
        return f"{service.currency} {(service.amount or 0) / 10**exponent:.{exponent}f}"

    def instant(self, local: dt.datetime) -> str:
        tz = dt.timezone(dt.timedelta(hours=-4)) if "fixed_offset" in self.breaks else self.tz
        return local.replace(tzinfo=tz).astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def times(self, start: dt.datetime) -> dict[str, str]:
        end = start + DURATION
        return {
            "starts_at": self.instant(start),
            "ends_at": self.instant(end),
            "starts_at_local": start.isoformat(),
            "ends_at_local": end.isoformat(),
        }

    def describe(self, service_id: str | None) -> dict[str, Any]:
        service = self.service(service_id)
        return {
            "id": service_id,
            "name": service.name,
            "duration": "PT45M",
            "price": self.money(service.amount, service.currency, service.kind),
            "requires_consultation": service.consultation,
        }

    def find(self, service_id: str | None, day: str, provider_id: str | None) -> list[dict[str, Any]]:
        service = self.service(service_id)
        date = dt.date.fromisoformat(day)
        if date.isoweekday() > 5:
            return []
        providers = [provider_id] if provider_id else list(PROVIDERS)
        return [
            {
                "id": f"{SCHEDULE['id']}:{provider}:{service_id}:{day}T{start}:00",
                "organization_id": ORG["id"],
                "organization_name": ORG["name"],
                "schedule_id": SCHEDULE["id"],
                "schedule_name": SCHEDULE["name"],
                "schedule_timezone": ORG["timezone"],
                "schedule_latitude": SCHEDULE["latitude"],
                "schedule_longitude": SCHEDULE["longitude"],
                "schedule_hours": HOURS,
                "provider_id": provider,
                "provider_name": self.named("providers", provider, PROVIDERS),
                "service_id": service_id,
                **self.times(dt.datetime.combine(date, dt.time.fromisoformat(start))),
                "price": self.money(service.amount, service.currency, service.kind),
            }
            for provider in providers
            if provider in PROVIDERS
            for start in STARTS
        ]

    def page(
        self, slots: list[dict[str, Any]], earliest_start: str | None, limit: int | None
    ) -> list[dict[str, Any]]:
        """availability.find's paging extension: slots from earliest_start (inclusive), `limit` a page."""
        if earliest_start is None and limit is None:
            return slots
        if limit is not None and limit < 1:
            raise Fail("invalid_input", "limit must be at least 1.", False)
        ordered = sorted(slots, key=lambda slot: str(slot["starts_at_local"]))
        if earliest_start is not None:
            cut = dt.datetime.fromisoformat(earliest_start)  # a malformed one: ValueError, invalid_input
            if cut.tzinfo is not None or "T" not in earliest_start:
                raise Fail("invalid_input", "earliest_start is merchant wall-clock with no offset.", False)
            if "earliest_start_ignored" not in self.breaks:
                ordered = [s for s in ordered if dt.datetime.fromisoformat(s["starts_at_local"]) >= cut]
        end = len(ordered) if limit is None else min(limit, len(ordered))
        while (
            0 < end < len(ordered) and ordered[end]["starts_at_local"] == ordered[end - 1]["starts_at_local"]
        ):
            end += 1
        if end < len(ordered):
            following = dt.datetime.fromisoformat(ordered[end]["starts_at_local"])
            if "page_skips_a_start" in self.breaks:
                following += dt.timedelta(minutes=1)
            cursor = following.isoformat(timespec="seconds")
            self.runtime = {
                "message": f"Partial list: {end} of {len(ordered)} slots; for the rest call again with "
                f'earliest_start="{cursor}".'
            }
        return ordered[:end]

    def policy(self, service_id: str | None) -> dict[str, Any]:
        service = self.service(service_id)
        fees = {
            key: self.money(amount, service.currency)
            for key, amount in (
                ("cancellation_fee", service.cancellation_fee),
                ("no_show_fee", service.no_show_fee),
            )
            if amount is not None
        }
        return fees | {
            "service_id": service_id,
            "cancellation_enabled": True,
            "cancellation_window": f"PT{service.window_minutes}M",
            "cancellation_note": "Cancel at least 6 hours before the appointment.",
            "late_grace": "PT15M",
            "payment_requirement": service.payment,
            "deposit": self.money(service.deposit, service.currency),
            "verification_method": service.verification,
            "organization": ORG,
        }

    # --- booking.create ----------------------------------------------------------------------------------
    def validate(self, mandate: dict[str, Any], args: dict[str, Any], service: Service) -> None:
        def fail(code: str, message: str, retryable: bool | None = False) -> Fail:
            return Fail(code, message, retryable)

        try:
            expires = dt.datetime.fromisoformat(str(mandate.get("expires_at")).replace("Z", "+00:00"))
        except ValueError:
            expires = None
        if not mandate.get("id") or expires is None or expires.tzinfo is None:
            raise fail("invalid_mandate", "The mandate needs an id and an expires_at with a timezone.")
        for key in ("max_price", "max_extra_fee"):
            if key in mandate and not isinstance((mandate[key] or {}).get("amount_minor"), int):
                raise fail("invalid_mandate", f"{key} needs a fixed amount_minor.")
        if expires <= dt.datetime.now(dt.UTC):
            raise fail("mandate_expired", "The mandate has expired.")
        if "booking.create" not in mandate.get("allowed_actions", []):
            raise fail("action_not_allowed", "booking.create is not in allowed_actions.")
        if mandate.get("organization_id") != ORG["id"]:
            raise fail("organization_not_allowed", "The organization is outside the mandate.")
        for scope, key, code in (
            ("service_ids", "service_id", "service_not_allowed"),
            ("schedule_ids", "schedule_id", "schedule_not_allowed"),
        ):
            if scope in mandate and args[key] not in mandate[scope]:
                raise fail(code, f"The {key} is outside the mandate.")
        if "provider_ids" in mandate:
            if not args["provider_id"]:
                raise fail("provider_unknown", "The slot does not identify a provider.")
            if args["provider_id"] not in mandate["provider_ids"]:
                raise fail("provider_not_allowed", "The provider is outside the mandate.")
        window = []
        for key in ("earliest_start", "latest_end"):
            try:
                value = dt.datetime.fromisoformat(mandate[key])
            except (KeyError, TypeError, ValueError):
                raise fail("invalid_mandate", f"{key} is missing or malformed.") from None
            if value.tzinfo is not None or str(mandate[key]).endswith("Z"):
                raise fail("invalid_mandate", f"{key} is merchant wall-clock and carries no offset.")
            window.append(value)
        start = dt.datetime.fromisoformat(f"{args['date']}T{args['time']}")
        if start.tzinfo is not None:
            raise fail("invalid_mandate", "date and time are merchant wall-clock and carry no offset.")
        if start < window[0]:
            raise fail("slot_too_early", "The slot starts before earliest_start.")
        if start + DURATION > window[1]:
            raise fail("slot_too_late", "The slot ends after latest_end.")
        cap = mandate.get("max_price") or {}
        if "price_before_currency" in self.breaks and (service.amount or 0) > cap.get("amount_minor", -1):
            raise fail("price_exceeds_mandate", "The price exceeds max_price.")
        if service.currency != cap.get("currency"):
            raise fail("currency_mismatch", "The price currency differs from the mandate cap.")
        if service.amount is None:
            raise fail(
                "requires_user_confirmation", "The price is not fixed; the user must confirm it.", None
            )
        if service.amount > cap.get("amount_minor", -1):
            raise fail("price_exceeds_mandate", "The price exceeds max_price.")
        if service.consultation:
            raise fail("requires_consultation_handoff", "This service needs a consultation; hand off.")
        if service.payment in ("deposit", "full_prepay") and not mandate.get("allow_policy_fee"):
            raise fail("requires_payment_handoff", "This service requires payment; hand off.")
        if service.payment == "unknown":
            raise fail("requires_user_confirmation", "The payment requirement is unknown.", None)
        fee_cap = mandate.get("max_extra_fee")
        if service.payment in ("deposit", "full_prepay") and isinstance(fee_cap, dict):
            required = service.deposit if service.payment == "deposit" else (service.amount or 0)
            if fee_cap.get("currency") != service.currency:
                raise fail("currency_mismatch", "The required payment's currency differs from max_extra_fee.")
            if required > fee_cap.get("amount_minor", -1):
                raise fail("policy_fee_exceeds_mandate", "The required payment exceeds max_extra_fee.")

    def summary(self, args: dict[str, Any], service: Service) -> str:
        """The approval summary, part by part; a `summary_without_<part>` break leaves that part out."""
        customer = args.get("customer") or {}
        start = dt.datetime.fromisoformat(f"{args['date']}T{args['time']}")
        display = self.display(service)
        payment = {
            "deposit": f"A deposit of {service.currency} {service.deposit / 100:.2f} is required to book.",
            "full_prepay": f"Full payment of {display} is required in advance.",
        }.get(service.payment, "No upfront payment or deposit is required to book.")
        fees = " ".join(
            f"{label} {service.currency} {amount / 100:.2f}."
            for label, amount in (
                ("Cancellation fee", service.cancellation_fee),
                ("No-show fee", service.no_show_fee),
            )
            if amount is not None
        )
        parts = {
            "service": f"Book {service.name}",
            "date": f"on {args['date']}",
            "time": f"at {args['time']}",
            "timezone": f"({ORG['timezone']})",
            "provider": f"with {self.named('providers', args['provider_id'], PROVIDERS)}",
            "location": f"at {self.named('locations', args['schedule_id'], LOCATIONS)}",
            "price": f"for {display}."
            if "summary_without_currency" not in self.breaks
            else f"for {display[4:]}.",
            "payment": payment,
            "fees": fees,
            "window": f"Free cancellation up to {service.window_minutes // 60} hours before the appointment.",
            "customer_name": f"The merchant will see the customer name {customer.get('display_name')}.",
            # The facts of osbp.conformance.summary_facts (no break leaves them out).
            "end": f"It ends at {(start + DURATION):%H:%M}, with {ORG['name']}.",
            "terms": 'Its note: "Cancel at least 6 hours before the appointment." Arriving more than 15 '
            "minutes late is a no-show." + (" The booking mandate does not cap these fees." if fees else ""),
            "names": " ".join(
                f"{label}: {customer[key]}."
                for key, label in (("given_name", "Given name"), ("family_name", "Family name"))
                if customer.get(key)
            ),
        }
        dropped = {name.removeprefix("summary_without_") for name in self.breaks}
        return " ".join(text for name, text in parts.items() if text and name not in dropped)

    def approves(self, token: str, digest: str, summary: str) -> bool:
        """Whether `token` was issued for this payload and summary and has not expired."""
        if token not in self.tokens:
            return False
        issued_for, shown, issued_at = self.tokens[token]
        expired = self.approval_ttl is not None and time.monotonic() - issued_at > self.approval_ttl
        return (
            issued_for == digest
            and (shown == summary or "token_not_bound_to_summary" in self.breaks)
            and (not expired or "token_never_expires" in self.breaks)
        )

    def count_platform_create(self) -> None:
        if self.stats_file is not None:
            count = int(self.stats_file.read_text(encoding="utf-8")) if self.stats_file.exists() else 0
            self.stats_file.write_text(str(count + 1), encoding="utf-8")

    def consume_arm(self) -> str | None:
        if self.arm_file is None or not self.arm_file.exists():
            return None
        outcome = self.arm_file.read_text(encoding="utf-8").strip()
        self.arm_file.unlink()
        return outcome

    def create(self, args: dict[str, Any]) -> dict[str, Any]:
        payload = {
            k: v for k, v in args.items() if k not in ("approval", "verification_code") and v is not None
        }
        digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
        key = args["idempotency_key"]
        if key in self.receipts:
            stored, receipt = self.receipts[key]
            if stored != digest:
                raise Fail(
                    "idempotency_conflict", "This idempotency_key was used with another payload.", False
                )
            if "replay_calls_platform" in self.breaks:
                self.count_platform_create()
            if "replay_unmarked" not in self.breaks:
                self.runtime = REPLAYED
            return receipt
        service = self.service(args["service_id"])
        if "no_mandate_check" not in self.breaks:
            self.validate(args["mandate"], args, service)
        approval = args.get("approval") or {}
        if args["schedule_id"] not in LOCATIONS and not approval:
            # A first call names a schedule the platform lacks (a retry with a token meets the gate first).
            raise Fail("schedule_not_found", "The platform has no such schedule.", False)
        token = str(approval.get("token"))
        summary = self.summary(args, service)
        if approval.get("confirmed") is not True or not self.approves(token, digest, summary):
            token = secrets.token_urlsafe(16)
            self.tokens[token] = (digest, summary, time.monotonic())
            retry = f'Retry booking.create with the same payload and approval.token="{token}".'
            raise Fail("requires_user_confirmation", f"{summary} {retry}", True)
        self.count_platform_create()
        if service.verification != "none":
            if args.get("verification_code") is None:
                raise Fail("requires_verification", "The platform requires customer verification.", True)
            if args["verification_code"] != SANDBOX_CODE and "wrong_code_accepted" not in self.breaks:
                raise Fail("verification_failed", "The verification code was rejected.", True)
        outcome = self.consume_arm()
        if outcome:
            raise Fail(outcome, f"The platform answered {outcome}.", True)
        booking_id = f"appt_{len(self.bookings) + 1:04d}"
        start = dt.datetime.fromisoformat(f"{args['date']}T{args['time']}")
        self.bookings[booking_id] = {
            "id": booking_id,
            "status": "booked",
            "service_id": args["service_id"],
            "schedule_id": args["schedule_id"],
            "provider_id": args["provider_id"],
            **self.times(start),
            "schedule_timezone": ORG["timezone"],
        }
        receipt = {
            "id": f"receipt_{key}",
            "booking_id": booking_id,
            "text": f"Booked {service.name} on {args['date']} at {args['time']} {ORG['timezone']}. "
            f"Booking id: {booking_id}.",
        }
        self.receipts[key] = (digest, receipt)
        del self.tokens[token]
        return receipt

    def status(self, booking_id: str) -> dict[str, Any]:
        if booking_id not in self.bookings:
            raise Fail("booking_not_found", "No appointment matches.", False)
        outage = self.arm_file.with_name(self.arm_file.name + ".unreachable") if self.arm_file else None
        if outage is not None and outage.exists():
            if "snapshot_unmarked" not in self.breaks:
                self.runtime = SNAPSHOT
            return self.bookings[booking_id]
        native = "confirmed"
        if self.status_file is not None and self.status_file.exists():
            native = json.loads(self.status_file.read_text(encoding="utf-8")).get(booking_id, native)
        status = "booked" if "status_collapsed" in self.breaks else NATIVE_STATUSES.get(native, "unknown")
        return self.bookings[booking_id] | {"status": status}


class ToyServer(MCPServer):
    """MCPServer, except that arguments its signature checks reject still get the OSBP envelope."""

    def __init__(self, toy: Toy) -> None:
        super().__init__("osbp-toy", version="0.1.0", log_level="WARNING")
        self.toy = toy

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError) or "plain_text_rejection" in self.toy.breaks:
                raise
            return self.toy.reject(cause)


def build(toy: Toy) -> MCPServer:
    server = ToyServer(toy)

    def hints(read_only: bool, *, destructive: bool = False, idempotent: bool = True) -> ToolAnnotations:
        return ToolAnnotations(
            read_only_hint=read_only,
            destructive_hint=destructive,
            idempotent_hint=idempotent,
            open_world_hint=True,
        )

    @server.tool(name="osbp_service_describe", annotations=hints(True))
    def service_describe(service_id: str | None = None) -> CallToolResult:
        return toy.run(lambda: toy.describe(service_id))

    @server.tool(name="osbp_availability_find", annotations=hints(True))
    def availability_find(
        date: str,
        service_id: str | None = None,
        schedule_id: str | None = None,
        provider_id: str | None = None,
        earliest_start: str | None = None,
        limit: int | None = None,
    ) -> CallToolResult:
        return toy.run(lambda: toy.page(toy.find(service_id, date, provider_id), earliest_start, limit))

    @server.tool(name="osbp_policy_explain", annotations=hints(True))
    def policy_explain(service_id: str | None = None) -> CallToolResult:
        return toy.run(lambda: toy.policy(service_id))

    @server.tool(name="osbp_verification_send", annotations=hints(False, idempotent=False))
    def verification_send(customer: dict[str, Any], purpose: str) -> CallToolResult:
        return toy.run(lambda: {"sent": True, "method": "sms", "purpose": purpose})

    @server.tool(name="osbp_verification_verify", annotations=hints(False, idempotent=False))
    def verification_verify(customer: dict[str, Any], purpose: str, code: str) -> CallToolResult:
        def refuse() -> dict[str, Any]:
            if "verify_always_verified" in toy.breaks:
                return {"verified": True, "method": "sms", "purpose": purpose}
            raise Fail("verification_verify_unsupported", "Pass the code to booking.create instead.", False)

        return toy.run(refuse)

    @server.tool(name="osbp_booking_create", annotations=hints(False))
    def booking_create(
        mandate: dict[str, Any],
        idempotency_key: str,
        service_id: str,
        schedule_id: str,
        provider_id: str,
        date: str,
        time: str,
        customer: dict[str, Any] | None = None,
        approval: dict[str, Any] | None = None,
        verification_code: str | None = None,
    ) -> CallToolResult:
        args = {
            "mandate": mandate,
            "idempotency_key": idempotency_key,
            "service_id": service_id,
            "schedule_id": schedule_id,
            "provider_id": provider_id,
            "date": date,
            "time": time,
            "customer": customer,
            "approval": approval,
            "verification_code": verification_code,
        }
        return toy.run(lambda: toy.create(args))

    @server.tool(name="osbp_booking_status", annotations=hints(True))
    def booking_status(booking_id: str, customer: dict[str, Any] | None = None) -> CallToolResult:
        return toy.run(lambda: toy.status(booking_id))

    @server.tool(name="osbp_handoff_request", annotations=hints(True))
    def handoff_request(reason: str, message: str, mandate_id: str | None = None) -> CallToolResult:
        value = {"status": "requires_human", "reason": reason, "message": message}
        return toy.run(lambda: value | ({"mandate_id": mandate_id} if mandate_id else {}))

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--break", dest="breaks", action="append", choices=BREAKS, default=[])
    parser.add_argument("--arm-file", type=Path)
    parser.add_argument("--stats-file", type=Path)
    parser.add_argument("--status-file", type=Path)
    parser.add_argument("--catalog-file", type=Path)
    parser.add_argument("--approval-ttl", type=float)
    args = parser.parse_args()
    toy = Toy(
        set(args.breaks),
        args.arm_file,
        args.stats_file,
        args.status_file,
        catalog_file=args.catalog_file,
        approval_ttl=args.approval_ttl,
    )
    server = build(toy)
    if "stdout_noise" in args.breaks:
        print("toy OSBP server starting", flush=True)  # noqa: T201 - the deliberate stdout noise
    server.run()


if __name__ == "__main__":
    main()
