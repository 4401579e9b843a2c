"""BookwellDirectory: which organization an id belongs to, answered by the real platform and then cached."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx2
import pytest

from osbp.adapter.directory import BookwellDirectory
from osbp.adapter.settings import AdapterSettings
from osbp.protocol.clock import FixedClock
from osbp.protocol.core import OsbpCore
from tests.support.reference import (
    CLEANING,
    MIDTOWN,
    ORG,
    Platform,
    RecordingTransport,
    book,
    create_input,
    value_of,
)

pytestmark = pytest.mark.anyio

NOTARY = "gus_notary"
EVERY = (ORG, NOTARY)


@pytest.fixture
def transport() -> RecordingTransport:
    """The real transport, recording what the directory sends."""
    return RecordingTransport()


@pytest.fixture
async def directory(
    platform: Platform, state_path: Path, transport: RecordingTransport
) -> AsyncIterator[BookwellDirectory]:
    """The directory on the shared platform (its settings name one organization; it serves any)."""
    settings = AdapterSettings(
        platform_base_url=platform.base_url, organization_id="*", state_path=state_path
    )
    found = BookwellDirectory(settings, transport=transport)
    yield found
    await found.aclose()


async def test_every_organization_on_the_platform_is_listed(directory: BookwellDirectory) -> None:
    """Platform choice (many organizations): `*` means the platform's own organization list."""
    listed = await directory.organizations()
    assert isinstance(listed, tuple)
    assert {ORG, NOTARY} <= set(listed)


async def test_a_service_and_a_schedule_belong_to_their_organization_only_among_the_candidates(
    directory: BookwellDirectory,
) -> None:
    """Platform choice (routing by id): the owner among the candidates, else none (existence not told)."""
    assert await directory.service_owner(CLEANING, EVERY) == ORG
    assert await directory.schedule_owner(MIDTOWN, EVERY) == ORG
    assert await directory.service_owner(CLEANING, (NOTARY,)) is None
    assert await directory.service_owner("no_such_service", EVERY) is None
    assert await directory.service_owner("not/an/id", EVERY) is None


async def test_a_lookup_among_fewer_candidates_does_not_hide_the_owner_from_a_later_one(
    directory: BookwellDirectory,
) -> None:
    """Platform choice (routing by id): a narrow lookup's miss is no verdict for a wider one."""
    assert await directory.service_owner(CLEANING, (NOTARY,)) is None
    assert await directory.service_owner(CLEANING, EVERY) == ORG


async def test_a_known_owner_is_answered_without_a_platform_request(
    directory: BookwellDirectory, transport: RecordingTransport
) -> None:
    """Platform choice (exact cache): an id never changes organization, so its owner is kept."""
    assert await directory.service_owner(CLEANING, EVERY) == ORG
    sent = len(transport.requests)
    assert await directory.service_owner(CLEANING, EVERY) == ORG
    assert await directory.service_owner(CLEANING, (NOTARY,)) is None
    assert len(transport.requests) == sent


async def test_a_booking_belongs_to_the_organization_whose_platform_knows_it(
    directory: BookwellDirectory, state_path: Path, clock: FixedClock, transport: RecordingTransport
) -> None:
    """Platform choice (routing by id): Bookwell's appointment ids name no organization; each is asked."""
    core = OsbpCore(directory.adapter(ORG), state=state_path, clock=clock)
    booking_id = value_of(await book(core, create_input())).booking_id
    assert await directory.booking_owner(booking_id, (NOTARY, ORG)) == ORG
    sent = len(transport.requests)
    assert await directory.booking_owner(booking_id, (NOTARY, ORG)) == ORG
    assert len(transport.requests) == sent
    assert await directory.booking_owner(booking_id, (NOTARY,)) is None
    assert await directory.booking_owner("apt_0000000000000000", EVERY) is None


class _Together(RecordingTransport):
    """The real transport, holding each request until ``expected`` requests are in flight at once."""

    def __init__(self, expected: int) -> None:
        super().__init__()
        self.expected = expected
        self.arrived = anyio.Event()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if len(self.requests) >= self.expected:
            self.arrived.set()
        await self.arrived.wait()
        return await super().handle_async_request(request)


async def test_the_candidates_catalogs_are_read_at_once(platform: Platform, state_path: Path) -> None:
    """Platform choice (routing by id): a first lookup among several organizations reads their
    catalogs concurrently (one round trip of waiting), and still finds the owner."""
    transport = _Together(expected=len(EVERY))
    settings = AdapterSettings(
        platform_base_url=platform.base_url, organization_id="*", state_path=state_path
    )
    found = BookwellDirectory(settings, transport=transport)
    try:
        with anyio.fail_after(10):  # read one after the other, the first would wait for the second forever
            assert await found.service_owner(CLEANING, EVERY) == ORG
    finally:
        await found.aclose()
    assert sorted({request.url.path for request in transport.requests}) == [
        f"/api/organizations/{ORG}/services",
        f"/api/organizations/{NOTARY}/services",
    ]
