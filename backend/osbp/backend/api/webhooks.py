"""Webhook endpoints: register a receiver (its signing secret is in this answer only), list, read, delete."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from osbp.backend import webhook_endpoints
from osbp.backend.api.deps import RuntimeDep, json_response, model_json, problem_responses
from osbp.backend.openapi import answer_headers
from osbp.backend.webhook_endpoints import EndpointCreate, EndpointCreated, EndpointList, EndpointOut

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["webhooks"])

_PATH = "/organizations/{organization_id}/webhook-endpoints"
_ONE = problem_responses("organization_not_found", "webhook_endpoint_not_found")


@router.post(
    _PATH,
    status_code=201,
    response_model=EndpointCreated,
    responses=problem_responses(
        "invalid_request", "webhook_url_not_allowed", "webhook_url_targets_platform", "organization_not_found"
    )
    | answer_headers(201, "Location"),
)
def register_webhook_endpoint(organization_id: str, body: EndpointCreate, runtime: RuntimeDep) -> Response:
    """Register a receiver URL for the organization's appointment events; the answer holds its secret."""
    created = webhook_endpoints.register(
        runtime.db,
        organization_id=organization_id,
        request=body,
        allow_non_loopback=runtime.settings.allow_non_loopback_webhooks,
        own=runtime.own_addresses,
        now=runtime.clock.now(),
        tokens=runtime.tokens,
    )
    response = json_response(model_json(created))
    response.status_code = 201
    response.headers["Location"] = f"/api{_PATH.format(organization_id=organization_id)}/{created.id}"
    return response


@router.get(_PATH, response_model=EndpointList, responses=problem_responses("organization_not_found"))
def list_webhook_endpoints(organization_id: str, runtime: RuntimeDep) -> Response:
    """The organization's endpoints, oldest first (no secrets)."""
    found = webhook_endpoints.list_endpoints(runtime.db, organization_id=organization_id)
    return json_response(model_json(found))


@router.get(f"{_PATH}/{{endpoint_id}}", response_model=EndpointOut, responses=_ONE)
def read_webhook_endpoint(organization_id: str, endpoint_id: str, runtime: RuntimeDep) -> Response:
    """One endpoint (no secret)."""
    found = webhook_endpoints.get_endpoint(
        runtime.db, organization_id=organization_id, endpoint_id=endpoint_id
    )
    return json_response(model_json(found))


@router.delete(f"{_PATH}/{{endpoint_id}}", status_code=204, responses=_ONE)
def delete_webhook_endpoint(organization_id: str, endpoint_id: str, runtime: RuntimeDep) -> Response:
    """Remove the endpoint; its pending deliveries are abandoned."""
    webhook_endpoints.delete_endpoint(runtime.db, organization_id=organization_id, endpoint_id=endpoint_id)
    return Response(status_code=204)
