"""What the routes share: the runtime dependency, and rendering a wire model.

The `Bookwell-Version` pin is the edge's (`osbp.backend.headers`) and is documented on every operation by
the contract (`osbp.backend.openapi`), so no route carries a dependency for it: FastAPI would resolve one
on every request only to document it.

`problem_responses` (the documented problem codes of a route) lives in `osbp.backend.openapi`; it is
re-exported here beside the other things every route module imports.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from fastapi import Depends, Request
from pydantic import BaseModel
from starlette.responses import Response

from osbp.backend.openapi import problem_responses
from osbp.backend.runtime import Runtime

__all__ = ["RuntimeDep", "json_response", "model_json", "model_response", "problem_responses"]


# The dependency is `async def` on purpose: it never blocks, and FastAPI runs a plain `def`
# dependency in the worker thread pool, a thread hand-off (and back) for every request.
async def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(_runtime)]


def model_response(model: BaseModel, headers: Mapping[str, str] | None = None) -> Response:
    """A wire model rendered as the JSON response, exactly as its declared ``response_model`` would be.

    The models are validated when built, so the route hands over finished bytes: FastAPI would otherwise
    dump the model, validate the dump again and serialize it, in a second worker-thread hop for a
    `def` route. The route's ``response_model`` still documents the shape in the OpenAPI schema.
    """
    return json_response(model_json(model), headers)


def model_json(model: BaseModel) -> bytes:
    """A wire model's JSON bytes, as :func:`model_response` sends them."""
    return model.model_dump_json(by_alias=True).encode()


def json_response(body: bytes, headers: Mapping[str, str] | None = None) -> Response:
    """Finished JSON bytes as the response (with ``headers``, if any)."""
    return Response(body, media_type="application/json", headers=headers)
