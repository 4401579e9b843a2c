"""The organization router: one server for several organizations, each call routed by the ids it carries.

Driven through the real composition root (`compose`) against the real platform on loopback, with the
principal set as the HTTP transport sets it (:func:`osbp.protocol.principal.acting_for`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from osbp.backend.serving import PlatformServer
from osbp.protocol.contract import BookingAdapter, Failure, Success
from osbp.protocol.models import (
    PolicyExplainInput,
    ServiceDescribeInput,
    VerificationSendInput,
)
from osbp.protocol.principal import Principal, acting_for
from osbp.protocol.timeutil import format_instant
from osbp.server.compose import compose
from osbp.server.orgs import served_organizations
from osbp.server.settings import ServerSettings
from tests.support.reference import CLEANING, NOW, ORG, create_input

pytestmark = pytest.mark.anyio

NOTARY = "gus_notary"
NOTARIZATION = "gus_notary_notarization"


def settings(platform: PlatformServer, tmp_path: Path, organizations: str, **extra: Any) -> ServerSettings:
    """Server settings for ``organizations`` on the platform, files in ``tmp_path``."""
    return ServerSettings(
        adapter={
            "platform_base_url": platform.base_url,
            "organization_id": organizations,
            "state_path": tmp_path / "state.sqlite3",
        },
        audit_log_path=tmp_path / "audit.jsonl",
        now=format_instant(NOW),
        **extra,
    )


@pytest.fixture
async def router(platform: PlatformServer, tmp_path: Path) -> AsyncIterator[BookingAdapter]:
    """The composed adapter for Carolyn's Dental and Gus' Notary."""
    parts = compose(settings(platform, tmp_path, f"{ORG},{NOTARY}"))
    assert not isinstance(parts, str), parts
    yield parts.adapter
    await parts.adapter.aclose()
    parts.audit.close()


def test_the_organization_setting_names_one_several_or_every_organization() -> None:
    """Platform choice (many organizations): `a`, `a,b` (duplicates once) or `*` (every one)."""
    assert served_organizations("carolyns_dental") == ("carolyns_dental",)
    assert served_organizations(" a, b ,a ") == ("a", "b")
    assert served_organizations("*") is None
    assert served_organizations(" , ") == ()


def test_a_plug_in_adapter_serves_one_organization_only(platform: PlatformServer, tmp_path: Path) -> None:
    """Platform choice: a plug-in is one organization's adapter; several are refused in one line."""
    refused = compose(settings(platform, tmp_path, "a,b", adapter_factory="tests.support.toy:build"))
    assert refused == (
        "--adapter / OSBP_ADAPTER_FACTORY: a plug-in adapter serves one organization; set "
        "--organization-id / OSBP_ORGANIZATION_ID to one id"
    )
    assert compose(settings(platform, tmp_path, " , ")) == (
        "--organization-id / OSBP_ORGANIZATION_ID must name an organization, several or *"
    )


async def test_reads_reach_the_organization_of_their_service(router: BookingAdapter) -> None:
    """Platform choice (routing by id): the service id says which organization answers."""
    dental = await router.explain_policy(PolicyExplainInput(service_id=CLEANING))
    notary = await router.explain_policy(PolicyExplainInput(service_id=NOTARIZATION))
    assert isinstance(dental, Success)
    assert isinstance(notary, Success)
    assert dental.value.organization is not None
    assert dental.value.organization.id == ORG
    assert notary.value.organization is not None
    assert notary.value.organization.id == NOTARY


async def test_a_call_naming_no_id_is_refused_when_several_organizations_could_answer(
    router: BookingAdapter,
) -> None:
    """Platform choice (routing by id): no guessing a merchant; one candidate is served as usual."""
    ambiguous = await router.describe_service(ServiceDescribeInput())
    assert isinstance(ambiguous, Failure)
    assert ambiguous.problem.code == "invalid_input"
    assert "service_id" in ambiguous.problem.message
    notary_only = Principal(issuer="i", subject="s", organizations=frozenset({NOTARY}))
    with acting_for(notary_only):
        purpose = await router.send_verification(VerificationSendInput(purpose=f"booking:{ORG}"))
        denied = await router.describe_service(ServiceDescribeInput(service_id=CLEANING))
    assert isinstance(purpose, Failure)
    assert purpose.problem.code == "invalid_verification_purpose"
    assert isinstance(denied, Failure)
    assert denied.problem.code == "service_not_found"


async def test_a_create_goes_to_the_mandates_organization_and_is_challenged_there(
    router: BookingAdapter,
) -> None:
    """OSBP spec, Mandate Enforcement (organization scope) with one server for several organizations."""
    challenged = await router.create_booking(create_input(idempotency_key="idem-orgs-1"))
    assert isinstance(challenged, Failure)
    assert challenged.problem.code == "requires_user_confirmation"
    with acting_for(Principal(issuer="i", subject="s", organizations=frozenset({NOTARY}))):
        refused = await router.create_booking(create_input(idempotency_key="idem-orgs-2"))
    assert isinstance(refused, Failure)
    assert refused.problem.code == "organization_not_allowed"
