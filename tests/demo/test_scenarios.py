"""The demo's scenario file, its verticals and the mandates the agent builds from them."""

from datetime import UTC, datetime
from importlib import resources

import pytest

from osbp.demo.scenarios import (
    MANDATE_HORIZON_DAYS,
    SCENARIO_FILE,
    SCENARIOS,
    VERTICALS,
    ScenarioFileError,
    build_mandate,
    load_scenarios,
    local_today,
    read_scenarios,
)
from osbp.protocol.mandate import validate_mandate
from osbp.protocol.models import Money, Policy, Service, Slot

NOW = datetime(2030, 5, 6, 13, tzinfo=UTC)


def test_the_mandate_window_is_merchant_wall_clock_from_tomorrow():
    """OSBP spec, BookingMandate: earliest_start/latest_end are wall-clock strings without an offset."""
    mandate = build_mandate(VERTICALS["dental"], NOW)
    assert mandate.earliest_start == "2030-05-07T00:00:00"
    assert mandate.latest_end == f"2030-05-{6 + MANDATE_HORIZON_DAYS:02d}T23:59:59"
    assert mandate.expires_at == "2030-05-20T13:00:00Z"


def test_the_merchant_local_date_follows_the_merchants_zone():
    """OSBP spec, Time Discipline: dates are merchant-local; 23:30Z is already tomorrow in Berlin."""
    late = datetime(2030, 5, 6, 23, 30, tzinfo=UTC)
    assert local_today(late, "America/New_York").isoformat() == "2030-05-06"
    assert local_today(late, "Europe/Berlin").isoformat() == "2030-05-07"


def test_the_same_clock_builds_the_same_mandate():
    """Platform choice: --now makes the demo deterministic, mandate included."""
    assert build_mandate(VERTICALS["spa"], NOW) == build_mandate(VERTICALS["spa"], NOW)


def test_every_vertical_mandate_admits_its_own_service_and_refuses_the_over_cap_one():
    """OSBP spec, Mandate Enforcement: the demo's happy path is inside scope, the coda above the cap."""
    vertical = VERTICALS["dental"]
    mandate = build_mandate(vertical, NOW)
    policy = Policy(payment_requirement="none")

    def slot(service_id: str, amount: int) -> tuple[Service, Slot]:
        price = Money(amount_minor=amount, currency="USD", type="fixed")
        service = Service(id=service_id, name=service_id, price=price)
        return service, Slot(
            id="x",
            organization_id=vertical.organization_id,
            schedule_id=vertical.schedule_id,
            provider_id="carolyns_dental_dr_reyes",
            service_id=service_id,
            starts_at_local="2030-05-07T10:00:00",
            ends_at_local="2030-05-07T10:45:00",
            price=price,
        )

    service, cleaning = slot(vertical.service_id, 12000)
    assert validate_mandate(mandate, slot=cleaning, service=service, policy=policy, now=NOW) is None
    assert vertical.over_cap_service_id is not None
    service, whitening = slot(vertical.over_cap_service_id, 25000)
    refused = validate_mandate(mandate, slot=whitening, service=service, policy=policy, now=NOW)
    assert refused is not None
    assert refused.code == "price_exceeds_mandate"


SHIPPED = resources.files("osbp.demo").joinpath(SCENARIO_FILE).read_text(encoding="utf-8")


def test_the_shipped_scenario_file_holds_the_demo_verticals_and_the_gallery_runs():
    """Platform choice: demo scenarios are data (scenarios.toml), validated by pydantic models."""
    assert list(VERTICALS) == ["dental", "notary", "auto", "spa"]
    assert all(key == vertical.key for key, vertical in VERTICALS.items())
    assert VERTICALS["notary"].modality == "remote"
    assert VERTICALS["dental"].customer.given_name == "Jordan"
    assert list(SCENARIOS.gallery_verticals) == ["fixture"]
    assert len(SCENARIOS.gallery) == 17
    assert load_scenarios(SHIPPED) == SCENARIOS


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        ('modality = "remote"', 'modality = "online"', "verticals.notary.modality: Input should be 'in_"),
        ('intent = "book a massage"', 'intent = "book a massage"\ncolour = 1', "verticals.spa.colour: Extra"),
        ('timezone = "Europe/London"', 'timezone = "Mars/Olympus"', "'Mars/Olympus' is not an IANA"),
        ("max_price_minor = 5000", 'max_price_minor = "5000"', "verticals.notary.max_price_minor: Input"),
        ('preferred_time = "11:00"', 'preferred_time = "11am"', "verticals.notary.preferred_time: String"),
        ('vertical = "spa"\nplay = "rate_l', 'vertical = "sauna"\nplay = "rate_l', "vertical 'sauna'"),
        ('play = "slot_taken"', 'play = "refusal"', "gallery[15]: Value error, a refusal block is required"),
        ('host_answers = ["accept"]\n', "", "gallery[4]: Value error, host_answers are required for play"),
        (
            'host_answers = ["accept"]',
            'host_answers = ["maybe"]',
            "gallery[4].host_answers[0]: Input should be",
        ),
        (
            'play = "happy"\noutcome',
            'play = "happy"\nhost_answers = ["accept"]\noutcome',
            "gallery[0]: Value",
        ),
        ('play = "happy"', 'play = "sing"', "gallery[0].play: Input should be 'happy'"),
        ("[verticals.spa]", "[verticals.spa", "not valid TOML"),
    ],
    ids=[
        "unknown-modality",
        "unknown-key",
        "unknown-zone",
        "amount-as-text",
        "bad-time",
        "unknown-vertical",
        "refusal-without-block",
        "host-play-without-answers",
        "unknown-host-answer",
        "host-answers-without-host-play",
        "unknown-play",
        "not-toml",
    ],
)
def test_a_malformed_scenario_file_is_refused_with_the_field_and_the_reason(old: str, new: str, reason: str):
    """Platform choice: a bad data file is refused with one clear line naming the field, never loaded."""
    assert old in SHIPPED
    with pytest.raises(ScenarioFileError) as refused:
        load_scenarios(SHIPPED.replace(old, new, 1))
    message = str(refused.value)
    assert message.startswith(f"{SCENARIO_FILE}: ")
    assert reason in message
    assert "\n" not in message


def test_a_scenario_file_on_disk_is_named_in_its_error(tmp_path):
    """Platform choice: the error says which file is malformed."""
    broken = tmp_path / "broken.toml"
    broken.write_text(SHIPPED.replace('"Dental cleaning in New York"', "3", 1), encoding="utf-8")
    with pytest.raises(ScenarioFileError, match=r"broken\.toml: verticals\.dental\.title: Input should be"):
        read_scenarios(broken)
