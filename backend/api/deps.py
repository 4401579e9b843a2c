"""Dependencies shared by the routes: the runtime, and the documented version pin header."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Header, Request

from osbp.backend.problems import PROBLEM_MEDIA_TYPE, TITLES
from osbp.backend.runtime import Runtime

__all__ = ["RuntimeDep", "problem_responses", "version_pin"]


def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(_runtime)]


def version_pin(
    bookwell_version: Annotated[
        str | None,
        Header(alias="Bookwell-Version", description="Dated API version, e.g. 2026-04-01 (the default)"),
    ] = None,
) -> None:
    """Declare the version pin in the OpenAPI document (the edge middleware enforces it)."""


def problem_responses(*codes: str) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` entries for the problem codes a route may return."""
    responses: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        status, _title = TITLES[code]
        entry = responses.setdefault(status, {"description": "", "content": {PROBLEM_MEDIA_TYPE: {}}})
        entry["description"] = ", ".join(filter(None, [entry["description"], code]))
    return responses
