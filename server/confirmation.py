"""Final confirmation through the host: the MCP elicitation confirmers behind booking.create.

:func:`confirmer_for` picks, per ``tools/call``, who confirms the approval summary
(:mod:`osbp.protocol.confirmation`), from the operator's policy and what the client declared:

* ``token`` policy, or a client without form elicitation under ``auto``: no confirmer, the spec's token
  path, unchanged;
* a 2026-07-28 client (multi-round-trip requests): :class:`InputRequiredConfirmer`. The first call answers
  an ``input_required`` result asking the user through the host, with the summary hash and the payload hash
  in the request state (sealed by the SDK's :class:`~mcp.server.request_state.RequestStateBoundary`, bound
  to the tool's arguments); the client's retry carries the answer, and only an accept bound to the hash of
  the summary the retry resolves books;
* an earlier client: :class:`ElicitingConfirmer` sends the classic in-request ``elicitation/create`` and
  waits for the answer (bounded by a timeout); the pipeline then resolves the facts again;
* when the platform then wants the customer's verification code and the call carries none, both
  eliciting confirmers collect it from the user in a second form (``collect_code``): the code goes to the
  platform and never into the agent's context or the audit log;
* ``elicitation`` policy with a client that cannot elicit: :class:`RefusingConfirmer`, a Problem saying so
  instead of a token.

A URL-mode confirmer (a page the server hosts, for the remote transport) is one more
:class:`~osbp.protocol.confirmation.Confirmer` here; see docs/server.md.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Literal

import anyio
from mcp.types import (
    CallToolRequestParams,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
)
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from osbp.protocol.confirmation import CONFIRMATION_TIMEOUT, CONFIRMATION_UNAVAILABLE, Confirmed, Refused
from osbp.protocol.idempotency import booking_payload_hash
from osbp.protocol.models import BookingCreateInput
from osbp.protocol.problems import ProblemCode, problem
from osbp.server._sdk import ServerRequestContext

__all__ = [
    "CODE_KEY",
    "CODE_MESSAGE",
    "CODE_SCHEMA",
    "CONFIRM_KEY",
    "CONFIRM_SCHEMA",
    "ConfirmationPolicy",
    "ElicitingConfirmer",
    "InputRequiredConfirmer",
    "RefusingConfirmer",
    "confirmation_message",
    "confirmer_for",
]

logger = logging.getLogger("osbp.server")

#: Who confirms: ``auto`` (through the host when the client can elicit, else the token), ``elicitation``
#: (through the host or not at all), ``token`` (always the spec's token path).
ConfirmationPolicy = Literal["auto", "elicitation", "token"]
#: The key of the confirmation among an ``input_required`` result's input requests.
CONFIRM_KEY = "osbp_final_confirmation"
#: The form the host shows: one yes/no; the host's accept / decline / cancel carry the user's choice.
CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "confirm": {
            "type": "boolean",
            "title": "Book this appointment",
            "description": "Yes: book exactly what the summary says.",
            "default": True,
        }
    },
    "required": ["confirm"],
}
_LEAD = "Final confirmation: book this appointment?\n\n"
_DECLINED = problem(
    ProblemCode.REQUIRES_USER_CONFIRMATION,
    "The user declined this booking when the host asked them to confirm it, so nothing was booked. Do not "
    "retry it; ask the user what they want instead, or route to handoff.request.",
    retryable=False,
)
_CANCELLED = problem(
    ProblemCode.REQUIRES_USER_CONFIRMATION,
    "The user dismissed the host's confirmation of this booking without confirming it, so nothing was "
    "booked. Do not retry it unless the user asks to book it again.",
    retryable=False,
)
_TIMED_OUT = problem(
    CONFIRMATION_TIMEOUT,
    "The user did not answer the host's confirmation of this booking in time, so nothing was booked. Retry "
    "booking.create with the same payload and idempotency_key when the user is ready to confirm.",
    retryable=True,
)
_HOST_FAILED = problem(
    CONFIRMATION_UNAVAILABLE,
    "The host could not ask the user to confirm this booking (its elicitation request failed), so nothing "
    "was booked. Route to handoff.request, or retry once the host can show confirmations.",
    retryable=False,
)
#: The form for the verification code: one string, entered by the user, never shown to the agent.
CODE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": {
            "type": "string",
            "title": "Verification code",
            "description": "The code the merchant sent to your phone or email.",
            "minLength": 1,
        }
    },
    "required": ["code"],
}
#: The key of the code request among an ``input_required`` result's input requests.
CODE_KEY = "osbp_verification_code"
CODE_MESSAGE = (
    "The merchant needs the verification code it sent you to complete this booking. Enter it here: it goes "
    "to the merchant only, never to the assistant. If no code has arrived, cancel, and the assistant will "
    "ask the merchant to send one."
)
_NO_CODE = problem(
    ProblemCode.REQUIRES_VERIFICATION,
    "The merchant requires a verification code and the user did not enter one when the host asked. If none "
    "was sent yet, call verification.send; then retry booking.create with the same payload and "
    "idempotency_key, without verification_code: the host asks the user for it, so it never passes "
    "through you. Nothing was booked.",
    retryable=True,
)
_ASKED_CODE = problem(
    ProblemCode.REQUIRES_VERIFICATION,
    "The user is being asked through the host for the verification code; nothing is booked until they "
    "enter it.",
    retryable=True,
)
_ASKED = problem(
    ProblemCode.REQUIRES_USER_CONFIRMATION,
    "The user is being asked through the host to confirm this booking; nothing is booked until they accept.",
    retryable=True,
)


def confirmation_message(summary: str) -> str:
    """What the host shows the user: a one-line question, then the approval summary, unchanged."""
    return _LEAD + summary


def _confirmed(result: ElicitResult) -> bool:
    return result.action == "accept" and (result.content or {}).get("confirm") is True


def _entered_code(result: ElicitResult) -> str | None:
    code = (result.content or {}).get("code") if result.action == "accept" else None
    return code.strip() if isinstance(code, str) and code.strip() else None


def _refusal(result: ElicitResult) -> Refused:
    if result.action == "accept":  # accepted the form but answered no
        return Refused("decline", _DECLINED)
    return Refused("decline", _DECLINED) if result.action == "decline" else Refused("cancel", _CANCELLED)


class RefusingConfirmer:
    """The operator requires confirmation through the host, and this client cannot elicit."""

    async def confirm(self, inp: BookingCreateInput, summary: str, summary_hash: str) -> Confirmed | Refused:
        """Always refused: a Problem that says why, never a token."""
        return Refused(
            "unavailable",
            problem(
                CONFIRMATION_UNAVAILABLE,
                "This server requires the user to confirm every booking through the host (MCP "
                "elicitation), and this client did not declare form elicitation, so nothing was booked "
                "and no approval token is issued. Use a host that supports elicitation, or route to "
                "handoff.request.",
                retryable=False,
            ),
        )


class ElicitingConfirmer:
    """Classic in-request ``elicitation/create``: asks and waits, at most ``timeout`` seconds."""

    def __init__(self, ctx: ServerRequestContext[Any], *, timeout: float) -> None:
        self._ctx = ctx
        self._timeout = timeout

    async def confirm(self, inp: BookingCreateInput, summary: str, summary_hash: str) -> Confirmed | Refused:
        """The user's answer to ``summary``; an accept is re-checked against fresh facts by the pipeline."""
        try:
            with anyio.fail_after(self._timeout):
                result = await self._ctx.session.elicit_form(
                    confirmation_message(summary), CONFIRM_SCHEMA, related_request_id=self._ctx.request_id
                )
        except TimeoutError:
            logger.info("confirmation_timed_out", extra={"summary_hash": summary_hash})
            return Refused("timeout", _TIMED_OUT)
        except Exception:
            # The host's failure (an error answer, a broken channel, an invalid result): nothing is booked.
            logger.warning("confirmation_host_failed", exc_info=True, extra={"summary_hash": summary_hash})
            return Refused("host_error", _HOST_FAILED)
        if _confirmed(result):
            return Confirmed(summary_hash, recheck=True)
        return _refusal(result)

    async def collect_code(self, inp: BookingCreateInput) -> str | Refused:
        """The verification code the user types into the host's form (it never reaches the agent)."""
        try:
            with anyio.fail_after(self._timeout):
                result = await self._ctx.session.elicit_form(
                    CODE_MESSAGE, CODE_SCHEMA, related_request_id=self._ctx.request_id
                )
        except TimeoutError:
            return Refused("code_refused", _NO_CODE)
        except Exception:
            logger.warning("verification_code_host_failed", exc_info=True)
            return Refused("code_refused", _NO_CODE)
        code = _entered_code(result)
        return code if code is not None else Refused("code_refused", _NO_CODE)


class InputRequiredConfirmer:
    """2026-07-28 multi-round-trip: ask in an ``input_required`` result, decide on the client's retry."""

    def __init__(self, params: CallToolRequestParams) -> None:
        self._responses = params.input_responses or {}
        self._state = params.request_state
        #: The ``input_required`` result to answer instead of the envelope, once this asked the user.
        self.pending: InputRequiredResult | None = None
        #: The summary hash the user accepted, once known in this call.
        self._accepted: str | None = None

    def _sealed(self, payload_hash: str) -> dict[str, Any] | None:
        """The request state this server sealed in the previous round, if it is this payload's."""
        if self._state is None:
            return None
        try:
            state = json.loads(self._state)
        except ValueError:
            return None
        if not isinstance(state, dict) or state.get("payload_hash") != payload_hash:
            return None
        if not isinstance(state.get("summary_hash"), str):
            return None
        return state

    def _answered(self, payload_hash: str) -> tuple[str, ElicitResult] | None:
        """The summary hash the retry's answer was given to, and the answer, if it is this payload's."""
        state = self._sealed(payload_hash)
        if state is None:
            return None
        if state.get("accepted") is True:
            # A round that asked for the code: the user accepted this summary in the round before.
            return state["summary_hash"], ElicitResult(action="accept", content={"confirm": True})
        answer = self._responses.get(CONFIRM_KEY)
        return (state["summary_hash"], answer) if isinstance(answer, ElicitResult) else None

    def _ask(self, key: str, message: str, schema: dict[str, Any], state: dict[str, Any]) -> None:
        ask = ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))
        self.pending = InputRequiredResult(
            result_type="input_required", input_requests={key: ask}, request_state=json.dumps(state)
        )

    async def confirm(self, inp: BookingCreateInput, summary: str, summary_hash: str) -> Confirmed | Refused:
        """Confirmed when the retry accepted this very summary; else the user is asked (again)."""
        payload_hash = booking_payload_hash(inp)
        answered = self._answered(payload_hash)
        if answered is not None and not _confirmed(answered[1]):
            return _refusal(answered[1])  # a no stands, whichever summary it answered
        if answered is not None and answered[0] == summary_hash:
            self._accepted = summary_hash
            return Confirmed(summary_hash, recheck=False)  # the facts were resolved in this very call
        # First call, or the answer was to another summary (the facts changed): ask about this one.
        state = {"payload_hash": payload_hash, "summary_hash": summary_hash}
        self._ask(CONFIRM_KEY, confirmation_message(summary), CONFIRM_SCHEMA, state)
        return Refused("asked", _ASKED)

    async def collect_code(self, inp: BookingCreateInput) -> str | Refused:
        """The code the user entered in the previous round, else ask for it (the summary stays accepted)."""
        answer = self._responses.get(CODE_KEY)
        if isinstance(answer, ElicitResult):
            code = _entered_code(answer)
            return code if code is not None else Refused("code_refused", _NO_CODE)
        if self._accepted is None:  # pragma: no cover - the pipeline asks for a code only after an accept
            return Refused("code_refused", _NO_CODE)
        payload_hash = booking_payload_hash(inp)
        state = {"payload_hash": payload_hash, "summary_hash": self._accepted, "accepted": True}
        self._ask(CODE_KEY, CODE_MESSAGE, CODE_SCHEMA, state)
        return Refused("code_asked", _ASKED_CODE)


def _elicits(ctx: ServerRequestContext[Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    # An empty elicitation capability means form mode (MCP 2025-11-25 backwards compatibility).
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def confirmer_for(
    ctx: ServerRequestContext[Any],
    params: CallToolRequestParams,
    policy: ConfirmationPolicy,
    *,
    timeout: float,
) -> ElicitingConfirmer | InputRequiredConfirmer | RefusingConfirmer | None:
    """Who confirms this call's booking (``None``: the token path)."""
    if policy == "token":
        return None
    if not _elicits(ctx):
        return RefusingConfirmer() if policy == "elicitation" else None
    if ctx.session.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return InputRequiredConfirmer(params)
    return ElicitingConfirmer(ctx, timeout=timeout)
