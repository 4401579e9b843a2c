"""A client generated from the served OpenAPI document compiles and books an appointment with it.

The client is generated at test time into a temporary folder, never committed: it is a build product of
the document, so the test proves that the document served *now* yields a working client (a committed one
would only prove that an older document did).
"""

from __future__ import annotations

import compileall
import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest

from osbp.backend.serving import PlatformServer
from tests.support.bookwell import DAY, make_settings

pytestmark = pytest.mark.integration

_PACKAGE = "bookwell_generated_client"
_GENERATOR = Path(sys.executable).with_name("openapi-python-client")


def _generate(document: bytes, into: Path) -> Path:
    """Run openapi-python-client on `document`; the generated package's folder."""
    (into / "openapi.json").write_bytes(document)
    # No post hooks: the generator would otherwise run ruff from PATH over its output.
    (into / "config.yml").write_text(f"package_name_override: {_PACKAGE}\npost_hooks: []\n")
    package = into / _PACKAGE
    completed = subprocess.run(
        [
            *(str(_GENERATOR), "generate", "--path", "openapi.json", "--config", "config.yml"),
            *("--meta", "none", "--output-path", str(package)),
        ],
        cwd=into,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "Warning" not in completed.stdout + completed.stderr, completed.stdout + completed.stderr
    return package


def test_a_client_generated_from_the_document_books_an_appointment(tmp_path, monkeypatch):
    """Platform choice (an exact contract): a generated client reads, verifies and books with 201."""
    with PlatformServer(make_settings()) as server:
        document = httpx2.get(f"{server.base_url}/openapi.json").content
        package = _generate(document, tmp_path)
        assert compileall.compile_dir(str(package), quiet=1)
        monkeypatch.syspath_prepend(str(tmp_path))
        try:
            _book_with_the_generated_client(server.base_url)
        finally:
            for name in [name for name in sys.modules if name.split(".")[0] == _PACKAGE]:
                del sys.modules[name]


def _book_with_the_generated_client(base_url: str) -> None:
    generated = importlib.import_module(_PACKAGE)
    with generated.Client(base_url=base_url, raise_on_unexpected_status=True) as client:
        _book(client, org="gus_notary", phone="+12125550142")


def _operation(tag: str, name: str) -> Any:
    return importlib.import_module(f"{_PACKAGE}.api.{tag}.{name}")


def _book(client: Any, *, org: str, phone: str) -> None:
    models = importlib.import_module(f"{_PACKAGE}.models")
    read_service = _operation("organizations", "read_service")
    read_availability = _operation("availability", "read_availability")
    send_verification = _operation("verification", "send_verification")
    outbox = _operation("testing", "outbox")
    create_appointment = _operation("appointments", "create_appointment")
    read_appointment = _operation("appointments", "read_appointment")

    service = read_service.sync(org, "gus_notary_remote_signing", client=client)
    assert isinstance(service, models.ServiceOut)
    assert service.policy.verification == "sms"
    availability = read_availability.sync(org, client=client, service_id=service.id, date=DAY)
    assert isinstance(availability, models.AvailabilityOut)
    slot = availability.slots[0]

    sent = send_verification.sync_detailed(
        org, client=client, body=models.VerificationSend(purpose=f"booking:{org}", phone=phone)
    )
    assert sent.status_code == 202
    messages = outbox.sync(client=client, organization_id=org)
    code = messages.messages[-1].code

    body = models.AppointmentCreate(
        service_id=service.id,
        location_id=slot.location_id,
        provider_id=slot.provider_id,
        date=slot.date,
        time=slot.time,
        customer=models.CustomerIn(display_name="Jane Customer", phone=phone),
        verification_code=code,
    )
    created = create_appointment.sync_detailed(org, client=client, body=body, idempotency_key="generated-1")
    assert created.status_code == 201, created.content
    appointment = created.parsed
    assert isinstance(appointment, models.AppointmentOut)
    assert (appointment.status, appointment.verified_by) == ("confirmed", "sms")
    assert created.headers["Location"] == f"/api/organizations/{org}/appointments/{appointment.id}"

    read_back = read_appointment.sync(org, appointment.id, client=client)
    assert isinstance(read_back, models.AppointmentOut)
    assert (read_back.id, read_back.date, read_back.time) == (appointment.id, slot.date, slot.time)

    # The code was consumed: the problem parses into the documented type, its extension member included.
    refused = create_appointment.sync_detailed(org, client=client, body=body, idempotency_key="generated-2")
    assert refused.status_code == 400
    assert (refused.parsed.code, refused.parsed.reason) == ("verification_failed", "no_challenge")
