"""The fault profile's shape, its loading for a run, and the injector's seeded, counted, scoped draws."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from osbp.backend.fault_profile import FaultInjector, FaultProfile, FaultRule, load_profile
from osbp.backend.faults import endpoint_names
from osbp.backend.settings import BackendSettings

CREATE = frozenset({"create_appointment", "POST /api/organizations/{organization_id}/appointments"})
READ = frozenset({"read_organization", "GET /api/organizations/{organization_id}"})


def injector(*rules: dict[str, object], seed: int = 0) -> FaultInjector:
    """An injector with the given rules in force."""
    return FaultInjector(FaultProfile.model_validate({"seed": seed, "rules": list(rules)}))


def pattern(faults: FaultInjector, requests: int = 40) -> list[bool]:
    """Which of ``requests`` creates of one organization a rule hit."""
    return [faults.draw("carolyns_dental", CREATE) is not None for _ in range(requests)]


def test_the_same_seed_draws_the_same_faults_and_another_seed_others():
    """Platform choice (fault profile): deterministic under a seed, so a failing run can be replayed."""
    rule = {"mode": "error", "rate": 0.5}
    first, again, other = (
        pattern(injector(rule, seed=7)),
        pattern(injector(rule, seed=7)),
        pattern(injector(rule, seed=8)),
    )
    assert first == again
    assert first != other
    assert 5 < sum(first) < 35  # a rate, neither never nor always


def test_setting_a_profile_again_restarts_its_draws_and_counts():
    """Platform choice (fault profile): PUT starts the seeded sequence and the hit counts afresh."""
    faults = injector({"mode": "error", "rate": 0.5}, seed=3)
    first = pattern(faults)
    faults.set(faults.profile)
    assert pattern(faults) == first
    assert faults.hits() == [sum(first)]


def test_count_hits_only_the_first_n_matching_requests():
    """Platform choice (fault profile): `count` is a 'first N' selector."""
    faults = injector({"mode": "reset", "count": 2})
    assert pattern(faults, 5) == [True, True, False, False, False]


def test_rules_are_scoped_by_organization_and_endpoint_and_the_first_hit_applies():
    """Platform choice (fault profile): per organization and per endpoint; the first rule hitting wins."""
    faults = injector(
        {"organization_id": "gus_notary", "endpoint": "create_appointment", "mode": "reset"},
        {"endpoint": "GET /api/organizations/{organization_id}", "mode": "error", "status": 502},
        {"organization_id": "gus_notary", "mode": "latency", "latency_ms": 5},
    )
    assert faults.draw("carolyns_dental", CREATE) is None
    gus_create = faults.draw("gus_notary", CREATE)
    assert gus_create is not None
    assert gus_create.rule.mode == "reset"
    read = faults.draw("carolyns_dental", READ)
    assert read is not None
    assert (read.rule.mode, read.rule.status) == ("error", 502)
    gus_other = faults.draw("gus_notary", frozenset({"list_services"}))
    assert gus_other is not None
    assert (gus_other.rule.mode, gus_other.delay_s) == ("latency", 0.005)


def test_latency_jitter_is_drawn_within_its_bound_and_seeded():
    """Platform choice (fault profile): a latency distribution (fixed plus uniform jitter), seeded."""
    rule = {"mode": "latency", "latency_ms": 10, "jitter_ms": 20}

    def delays(faults: FaultInjector) -> list[float]:
        hits = [faults.draw(None, CREATE) for _ in range(20)]
        return [hit.delay_s for hit in hits if hit is not None]

    drawn = delays(injector(rule, seed=1))
    assert drawn == delays(injector(rule, seed=1))
    assert len(drawn) == 20
    assert all(0.010 <= delay <= 0.030 for delay in drawn)
    assert len(set(drawn)) > 1


def test_reset_restores_the_profile_the_run_started_with():
    """Platform choice (fault profile): /_testing/reset returns to the run's --faults profile (or none)."""
    started = FaultProfile.model_validate({"rules": [{"mode": "reset"}]})
    faults = FaultInjector(started)
    faults.clear()
    assert not faults.active
    faults.restore()
    assert faults.profile == started
    assert not FaultInjector().active


@pytest.mark.parametrize(
    "rule",
    [
        {"mode": "explode"},
        {"mode": "reset", "hold_ms": 10},
        {"mode": "error", "status": 504},
        {"mode": "timeout", "hold_ms": 10**9},
        {"mode": "error", "rate": 1.5},
        {"mode": "latency", "latency_ms": -1},
        {"mode": "reset", "surprise": True},
    ],
)
def test_a_rule_out_of_shape_is_refused(rule):
    """Platform choice (fault profile): every field is validated; a timeout is bounded (never forever)."""
    with pytest.raises(ValidationError):
        FaultRule.model_validate(rule)


def test_an_unknown_endpoint_is_refused_by_name():
    """Platform choice (fault profile): an endpoint is a route name or METHOD /template the API has."""
    assert endpoint_names() >= CREATE | READ
    faults = injector({"endpoint": "create_appointments", "mode": "reset"})
    with pytest.raises(ValueError, match=r"rules\.0\.endpoint: unknown endpoint 'create_appointments'"):
        faults.check_endpoints(endpoint_names())


def test_a_profile_loads_from_inline_json_or_a_file(tmp_path: Path):
    """Platform choice (fault profile): `--faults` takes inline JSON or a JSON file."""
    document = {"seed": 4, "rules": [{"mode": "reset", "count": 1}]}
    path = tmp_path / "faults.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert (
        load_profile(json.dumps(document)) == load_profile(str(path)) == FaultProfile.model_validate(document)
    )


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("/nonexistent/faults.json", "cannot read fault profile file '/nonexistent/faults.json'"),
        ("{not json", "the fault profile is not JSON"),
        ('{"rules": [{"mode": "explode"}]}', "fault profile rules.0.mode: Input should be"),
    ],
)
def test_a_bad_profile_source_says_why_in_one_line(source, message):
    """Platform choice (fault profile): a bad --faults value is one clear sentence, not a traceback."""
    with pytest.raises(ValueError, match="^" + message.replace(".", r"\.").replace("(", r"\(")) as caught:
        load_profile(source)
    assert "\n" not in str(caught.value)


def test_settings_read_the_profile_and_seed_from_the_environment(monkeypatch):
    """Platform choice (fault profile): OSBP_BACKEND_FAULTS and OSBP_BACKEND_FAULT_SEED configure a run."""
    monkeypatch.setenv("OSBP_BACKEND_FAULTS", '{"seed": 1, "rules": [{"mode": "reset"}]}')
    monkeypatch.setenv("OSBP_BACKEND_FAULT_SEED", "9")
    profile = BackendSettings().fault_profile()
    assert profile is not None
    assert (profile.seed, profile.rules[0].mode) == (9, "reset")
    assert BackendSettings(faults=None).fault_profile() is None
