"""How the demo talks: rich formatting on a terminal, plain text when piped, and sentences from protocol data.

:func:`make_narrator` picks :class:`RichNarrator` when stdout is a terminal and :class:`PlainNarrator`
otherwise (or :class:`SilentNarrator` for ``--json``, whose transcript is printed at the end). The
helpers turn protocol values into what an agent would say: :func:`policy_sentence` reads a Policy back
as one sentence, :func:`service_sentence` and :func:`slot_sentence` describe a service and a slot.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Protocol, TextIO

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from osbp.protocol.money import format_display
from osbp.protocol.timeutil import parse_duration_minutes

__all__ = [
    "Narrator",
    "PlainNarrator",
    "RichNarrator",
    "SilentNarrator",
    "make_narrator",
    "money_text",
    "policy_sentence",
    "pretty_json",
    "service_sentence",
    "slot_sentence",
]


class Narrator(Protocol):
    """Where the demo's story goes."""

    def title(self, text: str) -> None:
        """The run's headline."""

    def section(self, text: str) -> None:
        """A new part of the story (one vertical, the coda)."""

    def say(self, who: str, text: str) -> None:
        """A line spoken by the user, the agent, the platform or the demo itself."""

    def block(self, label: str, body: str) -> None:
        """A quoted block: a mandate, an approval summary, a receipt."""

    def check(self, passed: bool, text: str) -> None:
        """An expected outcome, met or not."""


class PlainNarrator:
    """Plain text, for pipes and logs."""

    def __init__(self, out: TextIO | None = None) -> None:
        self._out = out or sys.stdout

    def _print(self, text: str = "") -> None:
        self._out.write(text + "\n")

    def title(self, text: str) -> None:
        """The run's headline."""
        self._print(text)
        self._print("=" * len(text))

    def section(self, text: str) -> None:
        """A new part of the story."""
        self._print()
        self._print(f"== {text} ==")

    def say(self, who: str, text: str) -> None:
        """One line, with who says it."""
        self._print(f"{who}: {text}")

    def block(self, label: str, body: str) -> None:
        """An indented block under a label."""
        self._print(f"{label}:")
        for line in body.splitlines():
            self._print(f"    {line}" if line else "")

    def check(self, passed: bool, text: str) -> None:
        """An expected outcome."""
        self._print(f"[{'ok' if passed else 'FAILED'}] {text}")


_WHO_STYLE = {
    "User": "bold cyan",
    "Agent": "bold green",
    "Platform": "bold magenta",
    "Operator": "bold yellow",
}


class RichNarrator:
    """Colour and panels, for a terminal."""

    def __init__(self, console: Console | None = None) -> None:
        self._console = console or Console(highlight=False)

    def title(self, text: str) -> None:
        """The run's headline."""
        self._console.rule(Text(text, style="bold"))

    def section(self, text: str) -> None:
        """A new part of the story."""
        self._console.print()
        self._console.rule(Text(text, style="bold blue"), align="left")

    def say(self, who: str, text: str) -> None:
        """One line, with who says it."""
        self._console.print(Text.assemble((f"{who}: ", _WHO_STYLE.get(who, "bold")), text))

    def block(self, label: str, body: str) -> None:
        """A panel with a title."""
        self._console.print(Panel(Text(body), title=label, title_align="left", expand=False))

    def check(self, passed: bool, text: str) -> None:
        """An expected outcome."""
        mark = ("✔ ", "bold green") if passed else ("✘ ", "bold red")
        self._console.print(Text.assemble(mark, (text, "dim" if passed else "bold red")))


class SilentNarrator:
    """Says nothing (``--json`` prints the transcript instead)."""

    def title(self, text: str) -> None:
        """Nothing."""

    def section(self, text: str) -> None:
        """Nothing."""

    def say(self, who: str, text: str) -> None:
        """Nothing."""

    def block(self, label: str, body: str) -> None:
        """Nothing."""

    def check(self, passed: bool, text: str) -> None:
        """Nothing."""


def make_narrator(*, json_mode: bool, out: TextIO | None = None) -> Narrator:
    """Rich on a terminal, plain when piped, silent for ``--json``."""
    if json_mode:
        return SilentNarrator()
    stream = out or sys.stdout
    if stream.isatty():
        return RichNarrator(Console(file=stream, highlight=False))
    return PlainNarrator(stream)


# --- Sentences from protocol values -----------------------------------------------------------------------


def money_text(money: dict[str, Any] | None) -> str:
    """A Money as a person reads it: the display hint, else the amount and currency, else its type."""
    if not money:
        return "no price reported"
    if money.get("display"):
        return str(money["display"])
    if money.get("amount_minor") is not None:
        display = format_display(int(money["amount_minor"]), str(money["currency"]))
        return display or f"{money['amount_minor']} minor units of {money['currency']}"
    return f"{str(money.get('type', 'unknown')).replace('_', ' ')} ({money['currency']})"


def _minutes_text(duration: str | None) -> str | None:
    minutes = parse_duration_minutes(duration) if duration else None
    if minutes is None:
        return None
    hours, rest = divmod(minutes, 60)
    if hours and rest:
        return f"{hours} h {rest} min"
    return f"{hours} h" if hours else f"{rest} minutes"


def service_sentence(service: dict[str, Any]) -> str:
    """'Regular cleaning: 45 minutes, $120.00.' plus the consultation caveat when there is one."""
    parts = [
        part for part in (_minutes_text(service.get("duration")), money_text(service.get("price"))) if part
    ]
    text = f"{service.get('name', service.get('id'))}: {', '.join(parts)}."
    if service.get("requires_consultation"):
        text += " The merchant must approve each request (consultation)."
    return text


def slot_sentence(slot: dict[str, Any]) -> str:
    """The slot as the agent proposes it: local time, zone, provider, place (or 'online, no address')."""
    start, end = str(slot["starts_at_local"]), str(slot["ends_at_local"])
    where = slot.get("schedule_name") or slot["schedule_id"]
    place = (
        f"{where} ({slot['schedule_address']})"
        if slot.get("schedule_address")
        else f"{where} (online, no address)"
    )
    who = f" with {slot['provider_name']}" if slot.get("provider_name") else ""
    zone = slot.get("schedule_timezone", "merchant local time")
    return (
        f"{start[:10]} {start[11:16]}–{end[11:16]} {zone}{who} at {place}, {money_text(slot.get('price'))} "
        f"(instant {slot.get('starts_at', 'unknown')})"
    )


_PAYMENT = {
    "none": "no upfront payment or deposit",
    "deposit": "a deposit is required",
    "full_prepay": "full prepayment is required",
    "unknown": "the payment requirement is unknown",
}
_VERIFICATION = {
    "sms": "the merchant verifies you with a code by text message",
    "email": "the merchant verifies you with a code by email",
    "none": "no verification step",
    "unknown": "the verification method is unknown",
}


def policy_sentence(policy: dict[str, Any]) -> str:
    """policy.explain read back to the user as one sentence."""
    clauses: list[str] = []
    window = _minutes_text(policy.get("cancellation_window"))
    if policy.get("cancellation_enabled") is False:
        clauses.append("this booking cannot be cancelled")
    elif window:
        fee = policy.get("cancellation_fee")
        clauses.append(
            f"cancel at least {window} ahead"
            + (f" or pay a {money_text(fee)} cancellation fee" if fee else " at no charge")
        )
    if policy.get("late_grace"):
        clauses.append(f"{_minutes_text(policy['late_grace'])} grace if you are late")
    if policy.get("no_show_fee"):
        clauses.append(f"a {money_text(policy['no_show_fee'])} no-show fee")
    payment = str(policy.get("payment_requirement", "unknown"))
    deposit = policy.get("deposit")
    clauses.append(
        f"a deposit of {money_text(deposit)}"
        if payment == "deposit" and deposit
        else _PAYMENT.get(payment, payment)
    )
    clauses.append(
        _VERIFICATION.get(str(policy.get("verification_method", "unknown")), "verification unknown")
    )
    organization = policy.get("organization") or {}
    who = organization.get("name") or organization.get("id") or "The merchant"
    text = f"Policy at {who}: " + "; ".join(clauses) + "."
    if policy.get("cancellation_note"):
        text += f' In their words: "{policy["cancellation_note"]}"'
    return text


def pretty_json(value: Any) -> str:
    """Indented JSON for a block."""
    return json.dumps(value, indent=2, ensure_ascii=False)
