"""The OSBP MCP server: the SDK's low-level ``Server`` wired to the eight tools.

The low-level API is used on purpose: ``MCPServer`` derives input schemas from Python signatures, while
OSBP publishes its own strict schemas (closed objects, no ``null``, flat arguments). Here ``tools/list``
returns exactly the protocol core's schemas, and every ``tools/call`` is validated against the protocol's
strict input model before any handler runs (:class:`~osbp.server.dispatch.ToolDispatcher`).

:func:`create_server` takes any :class:`~osbp.protocol.contract.BookingAdapter`; it does not own the
adapter or the audit log (the process entry point closes them), so one adapter can serve in-memory test
clients one after another.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeAlias

from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    InputRequiredResult,
    ListToolsResult,
    PaginatedRequestParams,
)

from osbp import __version__
from osbp.protocol.clock import Clock, SystemClock
from osbp.protocol.confirmation_rounds import ConfirmationRounds
from osbp.protocol.contract import BookingAdapter
from osbp.protocol.principal import Principal, acting_for
from osbp.protocol.schemas import tool_input_schema
from osbp.protocol.state import StateBackend
from osbp.protocol.tools import mcp_tool_name
from osbp.server._sdk import Server, ServerRequestContext
from osbp.server.audit import AuditLog
from osbp.server.confirmation import ConfirmationPolicy, confirmer_for
from osbp.server.dispatch import ToolDispatcher, new_audit_id
from osbp.server.tools import TOOL_DEFINITIONS, mcp_tools

if TYPE_CHECKING:  # the page is served over HTTP only: stdio never imports it
    from osbp.server.confirmation_page import ConfirmationSite

__all__ = ["INSTRUCTIONS", "SERVER_NAME", "PrincipalOf", "create_server"]

#: How a transport names the principal of a request (the HTTP request's authenticated user); stdio has none.
PrincipalOf: TypeAlias = Callable[[Any], Principal | None]

SERVER_NAME = "osbp"
#: How long the classic in-request confirmation waits for the user's answer (seconds).
CONFIRMATION_TIMEOUT_S = 300.0
_CREATE = mcp_tool_name("booking.create")

#: The canonical flow, for the agent (MCP server instructions).
INSTRUCTIONS = """\
OSBP books one service appointment, and only inside a BookingMandate the user approved.
Flow: get the mandate first -> osbp_service_describe -> osbp_availability_find -> osbp_policy_explain, \
and read the policy (payment, deposit, cancellation and no-show fees) back to the user.
Then osbp_booking_create without approval: a preflight that books nothing and returns \
requires_user_confirmation. Show the user only its approval summary, never the approval token or the \
retry instruction. Ask before booking; only after the user confirms, retry with the same payload and \
idempotency_key plus approval. When your host supports elicitation, the server asks the user itself \
through the host instead: no token comes back, and the call books only on the user's yes there.
On requires_verification call osbp_verification_send and get the code from the customer out of band; \
never invent one. Then retry osbp_booking_create with the code, and confirm with osbp_booking_status.
There is no cancellation tool: a create is irreversible here, so ask rather than book in doubt. Branch on \
problem.code only; when blocked, use osbp_handoff_request."""


def create_server(
    adapter: BookingAdapter,
    audit: AuditLog,
    *,
    clock: Clock | None = None,
    new_event_id: Callable[[], str] = new_audit_id,
    principal_of: PrincipalOf | None = None,
    confirmation: ConfirmationPolicy = "auto",
    confirmation_timeout: float = CONFIRMATION_TIMEOUT_S,
    request_state: RequestStateSecurity | None = None,
    site: ConfirmationSite | None = None,
    state: StateBackend | None = None,
) -> Server[Any]:
    """The MCP server exposing OSBP's eight tools over ``adapter``, auditing into ``audit``.

    With ``principal_of`` (remote serving) every call runs for the principal it names for the request.
    ``confirmation`` says who confirms a booking (:mod:`osbp.server.confirmation`): through the host
    when the client can elicit (``auto``), only through the host (``elicitation``), or always by token.
    ``request_state`` seals the multi-round-trip confirmation's state (default: a key of this process
    only); ``site``, the confirmation pages of URL mode (remote serving only). ``state`` is the OSBP state
    store where the answers to those rounds are recorded, so a declined round stays declined on every
    replica; without it no round is asked (a 2026-07-28 client that elicits is refused, not downgraded).
    """
    dispatcher = ToolDispatcher(adapter, audit, clock=clock, new_event_id=new_event_id)
    # Seals the multi-round-trip confirmation's request state (summary and payload hashes, the round id)
    # under the given key ring (else a key of this process), bound to the call's tool and arguments and,
    # when authenticated, to the caller: a client can echo it, not forge, move or hand it to another user.
    security = request_state if request_state is not None else RequestStateSecurity.ephemeral()
    # A round's answer is kept as long as its sealed state can be echoed.
    rounds = (
        ConfirmationRounds(state, clock or SystemClock(), timedelta(seconds=security.ttl))
        if state is not None
        else None
    )
    tools = mcp_tools()

    async def list_tools(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        confirmer = None
        if params.name == _CREATE:
            confirmer = confirmer_for(
                ctx, params, confirmation, timeout=confirmation_timeout, site=site, rounds=rounds
            )
        if principal_of is None:
            return await dispatcher.call(params.name, params.arguments, confirmer=confirmer)
        principal = principal_of(ctx.request)
        # Keyed here with the state's salt, for every use of the subject's hash in the state (scopes,
        # approvals, pages); the audit record keys its own subject (AuditLog.subject).
        with acting_for(principal.keyed(audit.subject_key) if principal is not None else None):
            return await dispatcher.call(params.name, params.arguments, confirmer=confirmer)

    def input_schema(name: str) -> dict[str, Any] | None:
        definition = TOOL_DEFINITIONS.get(name)
        return tool_input_schema(definition.name) if definition else None

    server: Server[Any] = Server(
        SERVER_NAME,
        version=__version__,
        title="OSBP (Open Service Booking Protocol)",
        instructions=INSTRUCTIONS,
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    server.middleware.append(RequestStateBoundary(security, default_audience=SERVER_NAME))
    return server
