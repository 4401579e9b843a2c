"""The platform's published contract: `/openapi.json` exactly as the platform behaves on the wire.

Routes declare only what is theirs, in one line each: `problem_responses(*codes)` for the problem codes
their services raise, `answer_headers(status, ...)` for the headers of their own answers, `not_modified()`
for a conditional read, `header_parameter(...)` for a request header. `contract(app)` builds FastAPI's
document and then states what the platform edge does for every operation, so a route added later gets
it without a line of its own:

- every operation takes `Bookwell-Version` and `X-Request-Id`, and can answer 400 `unsupported_version`,
  429 `rate_limited` (with `Retry-After`) and 500 `internal_error`; one with a path parameter can answer
  404 `not_found` (a refused path segment), one with a body or query can answer 400 `invalid_request`;
  one outside the test surface can answer 502 `bad_gateway` and 503 `service_unavailable` (and 500 with
  an optional `Retry-After`) while a fault profile is in force (`FAULT_CODES`);
- every response carries `Server`, `X-Request-Id`, `Bookwell-Version`, `RateLimit-Policy` and `RateLimit`,
  and a deprecated endpoint's responses (`headers.DEPRECATIONS`) carry `Deprecation`, `Sunset` and `Link`;
- every error is `application/problem+json` with the `Problem` schema, its `code` narrowed to the codes
  the operation documents for that status, with one example per code;
- FastAPI's default 422 `HTTPValidationError` is removed: validation errors are 400 `invalid_request`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fastapi import FastAPI

from osbp.backend.headers import (
    DEFAULT_VERSION,
    DEPRECATIONS,
    PLATFORM_SERVER,
    REQUEST_ID_HEADER,
    SUPPORTED_VERSIONS,
    VERSION_HEADER,
)
from osbp.backend.problems import PROBLEM_BASE, PROBLEM_MEDIA_TYPE, TITLES
from osbp.backend.validators import REVISION_HEADER

__all__ = [
    "EDGE_CODES",
    "EXAMPLES",
    "EXTENSIONS",
    "FAULT_CODES",
    "HEADERS",
    "PROBLEM_SCHEMA",
    "answer_headers",
    "contract",
    "header_parameter",
    "not_modified",
    "problem_responses",
]

_CODES_KEY = "x-problem-codes"  # carries a route's codes from its decorator to `contract`; not published
_EXAMPLE_REQUEST_ID = "5b6f1f8e-3c1d-4d9e-9a55-3c1f2b7e9a10"

#: Problem codes the edge can answer on every operation (`headers.PlatformEdge`).
EDGE_CODES = ("unsupported_version", "rate_limited", "internal_error")

#: Problem codes a fault profile in force (`--faults`, `/_testing/faults`) answers on every native
#: operation (`faults.FaultLayer`): documented because a client of a real platform must handle a failing
#: one. The test surface is never faulted. The fault modes that drop the connection answer nothing, so
#: there is no response to document for them.
FAULT_CODES = ("bad_gateway", "service_unavailable")
_UNFAULTED_PREFIX = "/_testing/"

_FIELD: dict[str, Any] = {
    "type": "string",
    "description": "The request field at fault.",
    "examples": ["customer.phone", "body.url"],
}

#: Extension members a problem may carry, by the code that carries them (name -> JSON Schema).
EXTENSIONS: dict[str, dict[str, dict[str, Any]]] = {
    "unsupported_version": {
        "supported_versions": {"type": "array", "items": {"type": "string", "enum": list(SUPPORTED_VERSIONS)}}
    },
    "invalid_request": {
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["field", "message"],
                "properties": {"field": {"type": "string"}, "message": {"type": "string"}},
                "additionalProperties": False,
            },
        }
    },
    "invalid_contact": {"field": _FIELD},
    "verification_failed": {
        "reason": {"type": "string", "enum": ["mismatch", "expired", "locked", "no_challenge"]}
    },
    "requires_verification": {"channel": {"type": "string", "enum": ["sms", "email"]}},
    "webhook_url_not_allowed": {"field": _FIELD},
    "webhook_url_targets_platform": {"field": _FIELD},
    "appointment_transition_not_allowed": {
        "action": {
            "type": "string",
            "enum": ["confirm", "cancel", "complete", "no-show", "reschedule"],
            "description": "The merchant action refused, as in the path.",
        },
        "appointment_status": {
            "type": "string",
            "enum": ["pending", "confirmed", "cancelled", "completed", "no_show", "archived"],
            "description": "The appointment's status as a read shows it.",
        },
    },
    "endpoint_retired": {
        "sunset": {"type": "string", "format": "date-time", "description": "The instant it was retired."},
        "successor": {
            "type": "string",
            "format": "uri",
            "description": "Where the replacement is described (the deprecation notice).",
        },
    },
}

#: Example detail and extension members per code, for the document's examples.
EXAMPLES: dict[str, tuple[str, dict[str, Any]]] = {
    "unsupported_version": (
        f"{VERSION_HEADER} '2024-01-01' is not a supported version.",
        {"supported_versions": list(SUPPORTED_VERSIONS)},
    ),
    "invalid_request": (
        "body.date: String should match pattern '^\\d{4}-\\d{2}-\\d{2}$'",
        {
            "errors": [
                {"field": "body.date", "message": "String should match pattern '^\\d{4}-\\d{2}-\\d{2}$'"}
            ]
        },
    ),
    "invalid_contact": (
        "customer.phone must be an E.164 phone number such as +12125550100.",
        {"field": "customer.phone"},
    ),
    "idempotency_key_missing": ("This request requires an Idempotency-Key header.", {}),
    "invalid_purpose": ("purpose must be 'booking:gus_notary'.", {}),
    "verification_failed": ("The verification code is not correct.", {"reason": "mismatch"}),
    "not_found": ("No such path: a path segment may not hold an encoded '/' or be '.' or '..'.", {}),
    "organization_not_found": ("No organization 'acme'.", {}),
    "service_not_found": ("No service 'massage' at 'carolyns_dental'.", {}),
    "location_not_found": ("No location 'uptown' at 'carolyns_dental'.", {}),
    "provider_not_found": ("No provider 'dr_who' at 'carolyns_dental'.", {}),
    "appointment_not_found": ("No appointment 'apt_0000000000000000' at 'carolyns_dental'.", {}),
    "slot_taken": (
        "Provider carolyns_dental_dr_reyes already has an appointment overlapping 2026-05-05 10:00.",
        {},
    ),
    "slot_unavailable": ("2026-05-05 07:00 is not an offered start for carolyns_dental_cleaning.", {}),
    "appointment_not_cancellable": ("The appointment is completed; it cannot be cancelled.", {}),
    "appointment_not_reschedulable": (
        "The appointment is cancelled; only a pending or confirmed appointment that has not started can be "
        "moved.",
        {},
    ),
    "offer_changed": ("The offer changed since it was read: read availability again.", {}),
    "appointment_changed": (
        "The appointment changed since it was read (it is at version 3): read its change quote again and "
        "send the new ETag as If-Match.",
        {},
    ),
    "idempotency_key_reused": ("This Idempotency-Key was already used with a different request body.", {}),
    "provider_not_eligible": (
        "Provider carolyns_dental_dr_okafor does not offer carolyns_dental_crown at carolyns_dental_midtown.",
        {},
    ),
    "requires_verification": (
        "This service requires sms verification: send a code, then repeat the create with verification_code.",
        {"channel": "sms"},
    ),
    "rate_limited": ("Request quota spent; retry after the window resets.", {}),
    "verification_send_limited": ("Too many verification messages to this contact; try again later.", {}),
    "internal_error": ("The platform failed unexpectedly; the error was logged.", {}),
    "webhook_url_not_allowed": (
        "Webhook URLs must point at loopback (127.0.0.1, ::1 or localhost), not 'example.com'.",
        {"field": "body.url"},
    ),
    "webhook_url_targets_platform": (
        "Webhook URL 127.0.0.1:8400 reaches this platform itself (it listens on port 8400): a delivery there "
        "would be a request to its own API. Point the endpoint at your receiver.",
        {"field": "body.url"},
    ),
    "webhook_endpoint_not_found": ("No webhook endpoint 'whe_0000000000000000' at 'carolyns_dental'.", {}),
    "appointment_transition_not_allowed": (
        "The appointment is cancelled (stored cancelled); it cannot be given the merchant action 'confirm'.",
        {"action": "confirm", "appointment_status": "cancelled"},
    ),
    "endpoint_retired": (
        "This endpoint was retired at its announced sunset (2032-10-01T00:00:00Z); use its successor.",
        {
            "sunset": "2032-10-01T00:00:00Z",
            "successor": "https://developer.bookwell.example/deprecations/availability-v1",
        },
    ),
    "bad_gateway": ("The platform is failing (HTTP 502); nothing was done. Retry later.", {}),
    "service_unavailable": ("The platform is failing (HTTP 503); nothing was done. Retry later.", {}),
}

_STRING: dict[str, Any] = {"type": "string"}

#: Every response header the platform documents, as an OpenAPI Header Object (published under
#: `components/headers`). `required` is whether the header is on every response that lists it.
HEADERS: dict[str, dict[str, Any]] = {
    "Server": {
        "description": "The platform's name and version.",
        "schema": _STRING,
        "example": PLATFORM_SERVER,
    },
    REQUEST_ID_HEADER: {
        "description": "The request id (a well-formed UUID sent in the request is echoed); also `request_id` "
        "in a problem body.",
        "schema": {"type": "string", "format": "uuid"},
        "example": _EXAMPLE_REQUEST_ID,
    },
    VERSION_HEADER: {
        "description": "The API version served (the pin sent, else the default).",
        "schema": {"type": "string", "enum": list(SUPPORTED_VERSIONS)},
        "example": DEFAULT_VERSION,
    },
    "RateLimit-Policy": {
        "description": "The client's quota `q` per window `w` seconds (IETF RateLimit header fields draft).",
        "schema": _STRING,
        "example": '"default";q=1000;w=60',
    },
    "RateLimit": {
        "description": "Requests `r` remaining in the window, `t` seconds until it resets.",
        "schema": _STRING,
        "example": '"default";r=998;t=57',
    },
    "Retry-After": {
        "description": "Seconds to wait before retrying (RFC 9110 §10.2.3).",
        "schema": {"type": "string", "pattern": "^[0-9]+$"},
        "example": "57",
    },
    "ETag": {
        "description": "Strong validator. On a catalog read, of the exact body: send it back as "
        "`If-None-Match`. On an appointment's answers, of the appointment's version: send it back as "
        "`If-Match` on its cancel or reschedule.",
        "schema": {"type": "string", "pattern": '^"[0-9a-f]{32}"$'},
        "example": '"3f1c0a9be2d44c1e8a0b7d6f5e4c3b2a"',
    },
    REVISION_HEADER: {
        "description": "The catalog version the answer was computed at (opaque: compare for equality).",
        "schema": _STRING,
        "example": "1f0a9c3be2d4-42",
    },
    "Location": {
        "description": "The created resource's path (the appointment, the webhook endpoint).",
        "schema": _STRING,
        "example": "/api/organizations/carolyns_dental/appointments/apt_7c1e2b9d04f3a6e1",
    },
    "Idempotent-Replayed": {
        "description": "On a replayed create, cancel or reschedule: the stored answer sent again for a "
        "repeated Idempotency-Key.",
        "schema": {"type": "string", "enum": ["true"]},
        "example": "true",
        "required": False,
    },
    "Deprecation": {
        "description": "RFC 9745: the instant the endpoint was deprecated, a structured-field Date.",
        "schema": {"type": "string", "pattern": "^@-?[0-9]+$"},
    },
    "Sunset": {"description": "RFC 8594: the HTTP-date the endpoint is removed.", "schema": _STRING},
    "Link": {"description": 'RFC 8288: the deprecation notice (`rel="deprecation"`).', "schema": _STRING},
}

_EDGE_HEADERS = ("Server", REQUEST_ID_HEADER, VERSION_HEADER, "RateLimit-Policy", "RateLimit")

#: The problem+json component (RFC 9457): the members Bookwell always sends, and every extension member.
PROBLEM_SCHEMA: dict[str, Any] = {
    "title": "Problem",
    "description": "An RFC 9457 problem. Branch on `code`; extension members appear only with their codes.",
    "type": "object",
    "required": ["type", "title", "status", "detail", "code"],
    "properties": {
        "type": {"type": "string", "format": "uri", "description": f"{PROBLEM_BASE}<code with dashes>"},
        "title": {"type": "string"},
        "status": {"type": "integer", "minimum": 400, "maximum": 599},
        "detail": {"type": "string"},
        "code": {"type": "string", "enum": sorted(TITLES)},
        "request_id": {"type": "string", "format": "uuid"},
    }
    | {name: schema for members in EXTENSIONS.values() for name, schema in members.items()},
    "additionalProperties": False,
}
_PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}


def problem_responses(*codes: str) -> dict[int | str, dict[str, Any]]:
    """A route's own `responses` entries: the problem codes its services may raise, grouped by status."""
    responses: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        status, _title = TITLES[code]
        responses.setdefault(status, {"description": "", _CODES_KEY: []})[_CODES_KEY].append(code)
    return responses


def _header_refs(names: Iterable[str]) -> dict[str, dict[str, str]]:
    return {name: {"$ref": f"#/components/headers/{name}"} for name in names}


def answer_headers(status: int, *names: str) -> dict[int | str, dict[str, Any]]:
    """A `responses` entry giving the route's `status` answer its own headers (names from `HEADERS`)."""
    unknown = [name for name in names if name not in HEADERS]
    if unknown:
        raise ValueError(f"undocumented headers {unknown}: add them to HEADERS")
    return {status: {"headers": _header_refs(names)}}


def not_modified() -> dict[int | str, dict[str, Any]]:
    """The `304` of a conditional catalog read: no body, the current validators (RFC 9110 §15.4.5)."""
    entry = answer_headers(304, "ETag", REVISION_HEADER)
    entry[304]["description"] = "Not Modified: the `If-None-Match` tag is still current; no body."
    return entry


def header_parameter(name: str, description: str, *, required: bool, **schema: Any) -> dict[str, Any]:
    """An OpenAPI header Parameter Object, for a route's `openapi_extra` (a header FastAPI cannot state)."""
    parameter: dict[str, Any] = {
        "name": name,
        "in": "header",
        "required": required,
        "description": description,
        "schema": {"type": "string"} | schema,
    }
    return parameter


def _problem_example(code: str) -> dict[str, Any]:
    status, title = TITLES[code]
    detail, extras = EXAMPLES.get(code, (title + ".", {}))
    value = {
        "type": PROBLEM_BASE + code.replace("_", "-"),
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
        "request_id": _EXAMPLE_REQUEST_ID,
    } | extras
    return {"summary": code, "value": value}


def _problem_response(codes: list[str]) -> dict[str, Any]:
    ordered = sorted(set(codes), key=list(TITLES).index)
    return {
        "description": ", ".join(ordered),
        "content": {
            PROBLEM_MEDIA_TYPE: {
                "schema": {"allOf": [_PROBLEM_REF, {"properties": {"code": {"enum": ordered}}}]},
                "examples": {code: _problem_example(code) for code in ordered},
            }
        },
    }


def _edge_parameters() -> list[dict[str, Any]]:
    return [
        header_parameter(
            VERSION_HEADER,
            f"Dated API version to serve (default {DEFAULT_VERSION}); unknown: 400 unsupported_version.",
            required=False,
            enum=list(SUPPORTED_VERSIONS),
        ),
        header_parameter(
            REQUEST_ID_HEADER,
            "A UUID to use as the request id (echoed when well formed, else a fresh one is assigned).",
            required=False,
        ),
    ]


def _codes_of(path: str, operation: dict[str, Any], responses: dict[str, Any]) -> dict[str, list[str]]:
    """The problem codes per status: the route's own plus the edge's."""
    codes: dict[str, list[str]] = {}
    for status, entry in responses.items():
        if _CODES_KEY in entry:
            codes[status] = list(entry.pop(_CODES_KEY))
    edge = list(EDGE_CODES)
    if not path.startswith(_UNFAULTED_PREFIX):
        edge.extend(FAULT_CODES)
    if "{" in path:
        edge.append("not_found")
    query = any(parameter.get("in") == "query" for parameter in operation.get("parameters", []))
    if query or "requestBody" in operation:
        edge.append("invalid_request")
    for code in edge:
        codes.setdefault(str(TITLES[code][0]), []).append(code)
    return codes


def _document_operation(path: str, operation: dict[str, Any]) -> None:
    responses: dict[str, Any] = operation.setdefault("responses", {})
    # FastAPI's default for a route with parameters: never sent here (validation errors are 400 problems).
    default_422 = responses.get("422", {}).get("content", {}).get("application/json", {}).get("schema")
    if default_422 == {"$ref": "#/components/schemas/HTTPValidationError"}:
        del responses["422"]
    codes = _codes_of(path, operation, responses)
    for status, listed in codes.items():
        own_headers = responses.get(status, {}).get("headers", {})
        responses[status] = _problem_response(listed) | {"headers": own_headers}
    lifecycle = [name for pattern, fields in DEPRECATIONS if pattern.match(path) for name in fields]
    if lifecycle:
        operation["deprecated"] = True
    for status, entry in responses.items():
        if status in {"304", "204"}:
            entry.pop("content", None)
        names = [*_EDGE_HEADERS, *lifecycle, *(["Retry-After"] if status == "429" else [])]
        headers = _header_refs(names)
        if status in {"500", "502", "503"} and not path.startswith(_UNFAULTED_PREFIX):
            # A fault rule's error answer carries Retry-After when the rule gives one.
            headers["Retry-After"] = HEADERS["Retry-After"] | {"required": False}
        if "not_found" in codes.get(status, []):
            # A refused segment holding an encoded '/' no longer matches the endpoint's path, so that one
            # 404 goes without the lifecycle headers.
            headers |= {name: HEADERS[name] | {"required": False} for name in lifecycle}
        entry["headers"] = headers | entry.get("headers", {})
    operation["responses"] = dict(sorted(responses.items()))
    # The edge reads these two on every request: one canonical declaration replaces a route's own.
    own = [p for p in operation.get("parameters", []) if p["name"] not in {VERSION_HEADER, REQUEST_ID_HEADER}]
    operation["parameters"] = own + _edge_parameters()


def contract(app: FastAPI) -> dict[str, Any]:
    """The app's OpenAPI document with the edge's behaviour stated on every operation (built once)."""
    if app.openapi_schema is not None:
        return app.openapi_schema
    document = FastAPI.openapi(app)
    for path, item in document.get("paths", {}).items():
        for method, operation in item.items():
            if method in {"get", "put", "post", "delete", "patch", "head", "options", "trace"}:
                _document_operation(path, operation)
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    schemas["Problem"] = PROBLEM_SCHEMA
    document["components"]["headers"] = {
        name: {"required": True} | header for name, header in HEADERS.items()
    }
    app.openapi_schema = document
    return document
