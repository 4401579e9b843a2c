"""The final-confirmation seam: who asks the user to confirm the approval summary, and what was asked.

booking.create's pipeline builds one approval summary from the facts it just resolved. Who confirms it is
pluggable:

* no :class:`Confirmer` (the default): the spec's token path. The summary goes back to the agent in a
  ``requires_user_confirmation`` challenge with an approval token the agent carries back
  (:class:`~osbp.protocol.approval.ApprovalGate`);
* a :class:`Confirmer`: the server asks the user itself, through the host (MCP elicitation), and only a
  :class:`Confirmed` answer to *this* summary's hash lets the booking proceed. A confirmer that waited for
  the user says so (``recheck``): the pipeline resolves the facts again and books only if their summary is
  still the one confirmed, else it asks again.

When the platform then asks for the customer's verification code and the call carries none, a confirmer
that is also a :class:`CodeCollector` collects it from the user the same way, so the code never passes
through the agent; the agent's path (``verification_code`` in the arguments) stays.

The caller (the MCP server, per tool call) installs the confirmer and a :class:`ConfirmationTrail` with
:func:`confirming`; the pipeline appends one :class:`ConfirmationStep` per summary it put to a
confirmation (by hash, never the text or the answer's free text), which the caller records in its audit
log. Scoped by a ContextVar, so overlapping calls never see each other's confirmer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from osbp.protocol.models import BookingCreateInput, Problem

__all__ = [
    "CONFIRMATION_PENDING",
    "CONFIRMATION_TIMEOUT",
    "CONFIRMATION_UNAVAILABLE",
    "Answer",
    "CodeCollector",
    "ConfirmationMode",
    "ConfirmationStep",
    "ConfirmationTrail",
    "Confirmed",
    "Confirmer",
    "Refused",
    "confirming",
    "current_confirmation",
]

#: The user did not answer the host's confirmation request in time (retryable: nothing was booked).
CONFIRMATION_TIMEOUT = "confirmation_timeout"
#: The retry came before the user answered the confirmation page (retryable: nothing was booked).
CONFIRMATION_PENDING = "confirmation_pending"
#: The host could not ask the user (it failed, or it cannot elicit while the operator requires it).
CONFIRMATION_UNAVAILABLE = "confirmation_unavailable"

#: ``url``: the user confirmed on the server's own confirmation page, opened through the host (URL-mode
#: elicitation); ``elicitation``: in the host's form.
ConfirmationMode = Literal["token", "elicitation", "url"]
#: What became of one summary put to a confirmation. ``challenged``: a token challenge went to the agent;
#: ``token``: a valid approval token; ``asked``: the host was asked and the answer is still to come.
#: ``pending``: the retry came before the user answered the confirmation page. ``spent``: the retry
#: answered a round already declined or dismissed (an echo of its state). ``code_*``: the platform
#: wanted a verification code, and the host was asked for it (the code itself is never recorded).
Answer = Literal[
    "challenged",
    "token",
    "asked",
    "pending",
    "accept",
    "decline",
    "cancel",
    "timeout",
    "host_error",
    "unavailable",
    "spent",
    "code_asked",
    "code_entered",
    "code_refused",
]


@dataclass(frozen=True, slots=True)
class Confirmed:
    """The user accepted the summary whose SHA-256 hex is ``summary_hash``.

    ``recheck``: the answer came after a wait, so the facts must be resolved again and still give this
    summary before anything is booked.
    """

    summary_hash: str
    recheck: bool = True


@dataclass(frozen=True, slots=True)
class Refused:
    """The summary was not confirmed (or not yet): ``answer`` for the audit, ``problem`` for the agent."""

    answer: Answer
    problem: Problem


@runtime_checkable
class Confirmer(Protocol):
    """Asks the user, outside the agent, to confirm one approval summary."""

    async def confirm(self, inp: BookingCreateInput, summary: str, summary_hash: str) -> Confirmed | Refused:
        """:class:`Confirmed` for an accepted ``summary``, else why not (nothing is booked)."""
        ...


@runtime_checkable
class CodeCollector(Protocol):
    """A confirmer that can also collect the customer's verification code from the user, past the agent."""

    async def collect_code(self, inp: BookingCreateInput) -> str | Refused:
        """The code the user entered, else why not (the agent then gets ``requires_verification``)."""
        ...


@dataclass(frozen=True, slots=True)
class ConfirmationStep:
    """One summary put to a confirmation, by hash: the audit's record of what was asked and answered."""

    mode: ConfirmationMode
    summary_hash: str
    payload_hash: str
    answer: Answer

    def to_wire(self) -> dict[str, str]:
        """The audit record's form."""
        return {
            "mode": self.mode,
            "summary_hash": self.summary_hash,
            "payload_hash": self.payload_hash,
            "answer": self.answer,
        }


@dataclass
class ConfirmationTrail:
    """The confirmer of one booking.create (``None``: the token path) and the steps the pipeline took."""

    confirmer: Confirmer | None = None
    steps: list[ConfirmationStep] = field(default_factory=list)

    @property
    def host_mode(self) -> ConfirmationMode:
        """How this trail's confirmer asks the user: its ``mode`` if it names one, else ``elicitation``."""
        mode = getattr(self.confirmer, "mode", "elicitation")
        return "url" if mode == "url" else "elicitation"

    def record(self, step: ConfirmationStep) -> None:
        """Append one step."""
        self.steps.append(step)


_current: ContextVar[ConfirmationTrail | None] = ContextVar("osbp_confirmation", default=None)


@contextmanager
def confirming(trail: ConfirmationTrail) -> Iterator[ConfirmationTrail]:
    """Run the enclosed booking.create with ``trail``'s confirmer, recording its steps into ``trail``."""
    reset = _current.set(trail)
    try:
        yield trail
    finally:
        _current.reset(reset)


def current_confirmation() -> ConfirmationTrail | None:
    """The trail installed by the enclosing :func:`confirming`, if any."""
    return _current.get()
