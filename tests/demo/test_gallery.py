"""The gallery's runs: one play per play name, and each entry of the scenario file becomes a scenario."""

from typing import get_args

from osbp.demo.gallery import GALLERY, PLAYS
from osbp.demo.scenarios import SCENARIOS, PlayName


def test_every_play_name_of_the_scenario_file_has_a_play():
    """Platform choice: a play the data file may name always exists (refusal plays are built from data)."""
    assert set(PLAYS) | {"refusal"} == set(get_args(PlayName))


def test_each_gallery_entry_becomes_a_scenario_with_its_request_overrides():
    """Platform choice: the gallery is the scenario file's [[gallery]] list, in order."""
    assert [scenario.id for scenario in GALLERY] == [entry.id for entry in SCENARIOS.gallery]
    consultation = next(scenario for scenario in GALLERY if scenario.id == "guardrail_consultation")
    assert consultation.vertical.intent == "book a repair consultation"
    assert consultation.vertical.organization_id == "andys_auto"
    assert SCENARIOS.verticals["auto"].intent == "book an oil change"
    unknown = next(scenario for scenario in GALLERY if scenario.id == "guardrail_unknown_payment")
    assert unknown.vertical.key == "fixture"
