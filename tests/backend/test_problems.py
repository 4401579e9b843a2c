"""Every error is one problem+json shape; unexpected failures are a bare 500 problem, logged."""

from __future__ import annotations

import logging

import pytest
from fastapi.testclient import TestClient

from osbp.backend import appointments
from osbp.backend.app import create_app
from osbp.backend.problems import TITLES, Problem
from tests.backend.conftest import make_settings
from tests.support.logs import fields

PROBLEM_KEYS = {"type", "title", "status", "detail", "code", "request_id"}


def test_problem_document_has_the_rfc_9457_members_and_a_machine_code(client):
    """RFC 9457 + issue 2: type, title, status, detail, plus a stable machine code."""
    response = client.get("/api/organizations/nobody")
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert set(body) >= PROBLEM_KEYS
    assert body["status"] == response.status_code == 404
    assert body["code"] == "organization_not_found"
    assert body["type"] == "https://developer.bookwell.example/problems/organization-not-found"


@pytest.mark.parametrize("code", sorted(TITLES))
def test_every_documented_code_renders_with_its_status(code):
    """Platform choice: the code table is the single source of status and title."""
    body = Problem(code, "detail").body()
    assert body["code"] == code
    assert body["status"] == TITLES[code][0]
    assert body["type"].endswith(code.replace("_", "-"))


def test_validation_errors_name_the_fields_without_echoing_values(client):
    """Issue 2: malformed input → 400 problem; values (possibly contact data) are not echoed."""
    response = client.post(
        "/api/organizations/gus_notary/verifications", json={"purpose": 5, "phone": "+12125550100", "x": 1}
    )
    assert response.status_code == 400
    fields = {item["field"] for item in response.json()["errors"]}
    assert {"body.purpose", "body.x"} <= fields


def test_unexpected_exception_is_a_500_problem_without_a_stack_trace(monkeypatch, caplog):
    """Issue 2, errors: no stack trace ever on the wire; the failure is logged with the request id."""

    def explode(*_args, **_kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(appointments, "get", explode)
    caplog.set_level(logging.ERROR)
    with TestClient(create_app(make_settings())) as client:
        response = client.get("/api/organizations/carolyns_dental/appointments/apt_x")
    assert response.status_code == 500
    assert response.json()["code"] == "internal_error"
    assert "secret internals" not in response.text
    assert "Traceback" not in response.text
    assert response.headers["server"] == "Bookwell/0.1.0"
    record = next(item for item in caplog.records if item.getMessage() == "unhandled_error")
    assert record.exc_info is not None
    assert fields(record)["request_id"] == response.headers["x-request-id"]
