"""Final confirmation through the host: the MCP elicitation confirmers behind booking.create.

:func:`confirmer_for` picks, per ``tools/call``, who confirms the approval summary
(:mod:`osbp.protocol.confirmation`), from the operator's policy and what the client declared:

* ``token`` policy, or a client without form elicitation under ``auto``: no confirmer, the spec's token
  path, unchanged;
* a 2026-07-28 client (multi-round-trip requests): :class:`InputRequiredConfirmer`. The first call answers
  an ``input_required`` result asking the user through the host, with the summary hash and the payload hash
  in the request state (sealed by the SDK's :class:`~mcp.server.request_state.RequestStateBoundary`, bound
  to the tool's arguments); the client's retry carries the answer, and only an accept bound to the hash of
  the summary the retry resolves books. Each round carries a random round id, and its answer is recorded
  durably (:mod:`osbp.protocol.confirmation_rounds`): a round declined or dismissed once stays declined,
  so a client echoing its state again with an accept books nothing;
* an earlier client: :class:`ElicitingConfirmer` sends the classic in-request ``elicitation/create`` and
  waits for the answer (bounded by a timeout); the pipeline then resolves the facts again;
* when the platform then wants the customer's verification code and the call carries none, both
  eliciting confirmers collect it from the user in a second form (``collect_code``): the code goes to the
  platform and never into the agent's context or the audit log;
* ``elicitation`` policy with a client that cannot elicit: :class:`RefusingConfirmer`, a Problem saying so
  instead of a token;
* ``page`` policy: only the confirmation page (URL mode below); any other client, or a server that serves
  no page (stdio), gets :class:`RefusingConfirmer`'s Problem, never the form and never a token;
* a :class:`PerOrganization` policy (``--confirmation-for``) applies the mode of the organization the
  call's mandate names, so one server can confirm one merchant's bookings only through the host and
  another's always by token, whatever the client declared.

* over Streamable HTTP, with a confirmation site (:mod:`osbp.server.confirmation_page`: authorization on,
  the page's origin loopback or HTTPS), a 2026-07-28 client that declares URL-mode elicitation:
  :class:`PageConfirmer`. Its ``input_required`` result points the host to a confirmation page this
  server hosts, issued for this summary, payload and authenticated subject; the client's retry books only
  when the page was confirmed for the summary the retry resolves, and spends the page; the host's decline
  of the URL declines the page, so no later answer on it confirms anything.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import anyio
from mcp.types import (
    CallToolRequestParams,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
)
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from osbp.protocol.confirmation import (
    CONFIRMATION_PENDING,
    CONFIRMATION_TIMEOUT,
    CONFIRMATION_UNAVAILABLE,
    Confirmed,
    Refused,
)
from osbp.protocol.confirmation_pages import Redemption
from osbp.protocol.confirmation_rounds import ConfirmationRounds, new_round_id
from osbp.protocol.idempotency import booking_payload_hash
from osbp.protocol.models import BookingCreateInput, Problem
from osbp.protocol.principal import current_principal
from osbp.protocol.problems import ProblemCode, problem
from osbp.server._sdk import ServerRequestContext

if TYPE_CHECKING:  # the page is served over HTTP only: stdio never imports it
    from osbp.server.confirmation_page import ConfirmationSite

__all__ = [
    "CODE_KEY",
    "CODE_MESSAGE",
    "CODE_SCHEMA",
    "CONFIRM_KEY",
    "CONFIRM_SCHEMA",
    "ConfirmationMode",
    "ConfirmationPolicy",
    "ElicitingConfirmer",
    "InputRequiredConfirmer",
    "PageConfirmer",
    "PerOrganization",
    "RefusingConfirmer",
    "confirmation_message",
    "confirmer_for",
]

logger = logging.getLogger("osbp.server")

#: Who confirms: ``auto`` (through the host when the client can elicit, else the token), ``elicitation``
#: (through the host or not at all), ``page`` (on this server's confirmation page or not at all),
#: ``token`` (always the spec's token path).
ConfirmationMode = Literal["auto", "elicitation", "page", "token"]


@dataclass(frozen=True, slots=True)
class PerOrganization:
    """The operator's mode for some organizations (``--confirmation-for``), ``default`` for the others.

    A call books for the organization its mandate names (:mod:`osbp.server.orgs` routes it there), so
    that organization's mode decides who confirms it.
    """

    default: ConfirmationMode
    modes: Mapping[str, ConfirmationMode]

    def mode_for(self, params: CallToolRequestParams) -> ConfirmationMode:
        """The mode of the organization ``params``' mandate names (the default when it names none)."""
        mandate = (params.arguments or {}).get("mandate")
        organization_id = mandate.get("organization_id") if isinstance(mandate, dict) else None
        if isinstance(organization_id, str):
            return self.modes.get(organization_id, self.default)
        return self.default


#: One mode for every organization, or one per organization.
ConfirmationPolicy = ConfirmationMode | PerOrganization
#: The key of the confirmation among an ``input_required`` result's input requests.
CONFIRM_KEY = "osbp_final_confirmation"
#: The form the host shows: one yes/no, unticked until the user ticks it (a pre-ticked box invites a
#: click-through); the host's accept / decline / cancel carry the user's choice.
CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "confirm": {
            "type": "boolean",
            "title": "Book this appointment",
            "description": "Yes: book exactly what the summary says.",
            "default": False,
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
_SPENT = problem(
    ProblemCode.REQUIRES_USER_CONFIRMATION,
    "The user already declined or dismissed this confirmation, and an answer given to it cannot be "
    "changed, so nothing was booked. Ask the user what they want; if they want this booking after all, "
    "call booking.create again with the same payload and idempotency_key and without this request state: "
    "the host asks them anew.",
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


_NO_ELICITATION = problem(
    CONFIRMATION_UNAVAILABLE,
    "This server requires the user to confirm every booking through the host (MCP elicitation), and this "
    "client did not declare form elicitation, so nothing was booked and no approval token is issued. Use "
    "a host that supports elicitation, or route to handoff.request.",
    retryable=False,
)
_PAGE_REQUIRED = problem(
    CONFIRMATION_UNAVAILABLE,
    "This merchant requires the user to confirm every booking on this server's confirmation page, which "
    "the host opens through URL-mode elicitation (MCP 2026-07-28, over this server's Streamable HTTP "
    "endpoint), and this client did not declare URL-mode elicitation here, so nothing was booked. No "
    "form and no approval token can stand in for the page. Use a host that supports URL-mode "
    "elicitation, or route to handoff.request.",
    retryable=False,
)
_NO_ROUNDS = problem(
    CONFIRMATION_UNAVAILABLE,
    "This server keeps no record of confirmation rounds, so it cannot ask the user through the host in "
    "rounds, and nothing was booked. Route to handoff.request.",
    retryable=False,
)


class RefusingConfirmer:
    """The operator requires a confirmation this client (or this server) cannot give: refused, no token."""

    def __init__(self, why: Problem = _NO_ELICITATION, *, mode: str = "elicitation") -> None:
        self._why = why
        #: Audited as ``confirmation.mode`` (``url`` when the page was required).
        self.mode = mode

    async def confirm(self, inp: BookingCreateInput, summary: str, summary_hash: str) -> Confirmed | Refused:
        """Always refused: a Problem that says why, never a token."""
        return Refused("unavailable", self._why)


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

    def __init__(self, params: CallToolRequestParams, rounds: ConfirmationRounds) -> None:
        self._responses = params.input_responses or {}
        self._state = params.request_state
        self._rounds = rounds
        #: The ``input_required`` result to answer instead of the envelope, once this asked the user.
        self.pending: InputRequiredResult | None = None
        #: The summary hash the user accepted, once known in this call, and the round that asked it.
        self._accepted: str | None = None
        self._round: str | None = None

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

    async def _settled(self, state: dict[str, Any], payload_hash: str) -> str | Refused | None:
        """The summary hash the retry's round stands accepted for, the refusal, or ``None`` (no answer).

        The answer is recorded against the round first: a no spends the round, and an accept counts only
        if no no came before it (a client echoing a declined round's state books nothing).
        """
        round_id = state.get("round")
        if not isinstance(round_id, str):
            return None  # sealed by a version without rounds: ask again
        if state.get("accepted") is True:
            # A round that asked for the code: the user accepted this summary in the round before.
            standing = await self._rounds.standing(round_id, payload_hash)
            return str(state["summary_hash"]) if standing == "accepted" else Refused("spent", _SPENT)
        answer = self._responses.get(CONFIRM_KEY)
        if not isinstance(answer, ElicitResult):
            return None
        if not _confirmed(answer):
            await self._rounds.answer(round_id, payload_hash, "declined")
            return _refusal(answer)  # a no stands, whichever summary it answered
        if await self._rounds.answer(round_id, payload_hash, "accepted") != "accepted":
            logger.warning("confirmation_round_replayed", extra={"summary_hash": state["summary_hash"]})
            return Refused("spent", _SPENT)
        return str(state["summary_hash"])

    def _ask(self, key: str, message: str, schema: dict[str, Any], state: dict[str, Any]) -> None:
        ask = ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))
        self.pending = InputRequiredResult(
            result_type="input_required", input_requests={key: ask}, request_state=json.dumps(state)
        )

    async def confirm(self, inp: BookingCreateInput, summary: str, summary_hash: str) -> Confirmed | Refused:
        """Confirmed when the retry accepted this very summary; else the user is asked (again)."""
        payload_hash = booking_payload_hash(inp)
        state = self._sealed(payload_hash)
        settled = await self._settled(state, payload_hash) if state is not None else None
        if isinstance(settled, Refused):
            return settled
        if settled == summary_hash:
            assert state is not None  # settled only from a sealed state
            self._accepted, self._round = summary_hash, state["round"]
            return Confirmed(summary_hash, recheck=False)  # the facts were resolved in this very call
        # First call, or the answer was to another summary (the facts changed): ask about this one.
        state = {"payload_hash": payload_hash, "summary_hash": summary_hash, "round": new_round_id()}
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
        state: dict[str, Any] = {"payload_hash": payload_hash, "summary_hash": self._accepted}
        state["accepted"] = True
        if self._round is not None:
            state["round"] = self._round  # the code round stands on the round that accepted
        self._ask(CODE_KEY, CODE_MESSAGE, CODE_SCHEMA, state)
        return Refused("code_asked", _ASKED_CODE)


_PAGE_LEAD = (
    "Final confirmation: open this server's confirmation page to review this booking and confirm or "
    "decline it there. Nothing is booked until you confirm on the page."
)
_PAGE_PENDING = problem(
    CONFIRMATION_PENDING,
    "The user has not confirmed this booking on the confirmation page yet, so nothing was booked. Retry "
    "booking.create with the same payload and idempotency_key when the user says they are ready: the host "
    "is given a new confirmation page for the booking.",
    retryable=True,
)
_PAGE_EXPIRED = problem(
    CONFIRMATION_TIMEOUT,
    "The confirmation page for this booking expired before the user confirmed it, so nothing was booked. "
    "Retry booking.create with the same payload and idempotency_key when the user is ready to confirm.",
    retryable=True,
)
_PAGE_FOREIGN = problem(
    CONFIRMATION_UNAVAILABLE,
    "This confirmation page was issued for another caller or another booking, so it confirms nothing here "
    "and nothing was booked. Retry booking.create without it to be asked for this booking.",
    retryable=False,
)
_PAGE_USED = problem(
    CONFIRMATION_UNAVAILABLE,
    "This confirmation page was already spent by a booking, so it confirms nothing more and nothing was "
    "booked. Retry booking.create with the same payload and idempotency_key to replay that booking.",
    retryable=False,
)
_AGENT_CODE = problem(
    ProblemCode.REQUIRES_VERIFICATION,
    "The merchant requires a verification code. If none was sent yet, call verification.send; ask the user "
    "for the code and retry booking.create with the same payload, idempotency_key and verification_code. "
    "Nothing was booked.",
    retryable=True,
)
#: What a redemption that must not book answers (``confirmed`` books; ``other_summary`` asks again).
_UNREDEEMED: dict[Redemption, Refused] = {
    "pending": Refused("pending", _PAGE_PENDING),
    "declined": Refused("decline", _DECLINED),
    "expired": Refused("timeout", _PAGE_EXPIRED),
    "used": Refused("unavailable", _PAGE_USED),
    "foreign": Refused("unavailable", _PAGE_FOREIGN),
}


class PageConfirmer(InputRequiredConfirmer):
    """2026-07-28 URL mode: the host opens this server's confirmation page; the retry redeems it."""

    #: Audited as ``confirmation.mode = "url"``.
    mode = "url"

    def __init__(
        self,
        params: CallToolRequestParams,
        site: ConfirmationSite,
        rounds: ConfirmationRounds,
        *,
        forms: bool,
    ) -> None:
        super().__init__(params, rounds)
        self._site = site
        self._forms = forms

    async def confirm(self, inp: BookingCreateInput, summary: str, summary_hash: str) -> Confirmed | Refused:
        """Confirmed when the retry's page was confirmed for this very summary (and is spent now)."""
        payload_hash = booking_payload_hash(inp)
        state = self._sealed(payload_hash)
        subject = _subject_hash()
        if state is not None and state.get("accepted") is True and state["summary_hash"] == summary_hash:
            self._accepted = summary_hash  # a code round: the page was redeemed in the round before
            return Confirmed(summary_hash, recheck=False)
        answer = self._responses.get(CONFIRM_KEY)
        page = state.get("page") if state is not None else None
        if isinstance(page, str) and isinstance(answer, ElicitResult):
            if answer.action != "accept":  # the user would not open the page: it is declined for good
                await self._site.pages.decline(page, subject, payload_hash)
                return _refusal(answer)
            redeemed = await self._site.pages.redeem(page, subject, payload_hash, summary_hash)
            if redeemed == "confirmed":
                self._accepted = summary_hash
                return Confirmed(summary_hash, recheck=False)  # the facts were resolved in this very call
            if redeemed != "other_summary":
                return _UNREDEEMED[redeemed]
        # First call, or the page confirmed another summary (the facts changed): a page for this one.
        issued = await self._site.pages.issue(subject, payload_hash, summary_hash, summary)
        ask = ElicitRequest(
            params=ElicitRequestURLParams(message=_PAGE_LEAD, url=self._site.url(issued.secret))
        )
        sealed = {"payload_hash": payload_hash, "summary_hash": summary_hash, "page": issued.key}
        self.pending = InputRequiredResult(
            result_type="input_required", input_requests={CONFIRM_KEY: ask}, request_state=json.dumps(sealed)
        )
        return Refused("asked", _ASKED)

    async def collect_code(self, inp: BookingCreateInput) -> str | Refused:
        """Through the host's form when the client declared form elicitation, else the agent's path."""
        if not self._forms:
            return Refused("code_refused", _AGENT_CODE)
        return await super().collect_code(inp)


def _subject_hash() -> str:
    principal = current_principal()
    return principal.subject_hash if principal is not None else ""


def _elicits_url(ctx: ServerRequestContext[Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and elicitation.url is not None


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
    site: ConfirmationSite | None = None,
    rounds: ConfirmationRounds | None = None,
) -> ElicitingConfirmer | InputRequiredConfirmer | RefusingConfirmer | None:
    """Who confirms this call's booking (``None``: the token path).

    ``site``: the confirmation pages (remote serving); ``rounds``: where the answers of 2026-07-28 rounds
    are recorded (without it no round is asked: the call is refused, never downgraded to the token).
    """
    if isinstance(policy, PerOrganization):
        policy = policy.mode_for(params)
    if policy == "token":
        return None
    modern = ctx.session.protocol_version in MODERN_PROTOCOL_VERSIONS
    on_page = site if modern and _elicits_url(ctx) else None
    if policy == "page" and on_page is None:
        # The operator requires the page: never the form, never the token in its stead.
        return RefusingConfirmer(_PAGE_REQUIRED, mode="url")
    if not modern:
        if _elicits(ctx):
            return ElicitingConfirmer(ctx, timeout=timeout)
        return RefusingConfirmer() if policy == "elicitation" else None
    if on_page is None and not _elicits(ctx):
        return RefusingConfirmer() if policy == "elicitation" else None
    if rounds is None:
        return RefusingConfirmer(_NO_ROUNDS)
    if on_page is not None:
        return PageConfirmer(params, on_page, rounds, forms=_elicits(ctx))
    return InputRequiredConfirmer(params, rounds)
