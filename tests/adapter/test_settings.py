"""AdapterSettings: the adapter's part of the process's one settings object; it reads nothing itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from osbp.adapter import AdapterSettings
from osbp.adapter.settings import Setting
from osbp.protocol.store import DEFAULT_STATE_PATH


def test_the_platform_and_the_organization_have_no_default() -> None:
    """OSBP spec, one organization per server: no merchant is guessed, so both must be given."""
    with pytest.raises(ValidationError) as caught:
        AdapterSettings()  # type: ignore[call-arg]
    assert {(error["loc"], error["type"]) for error in caught.value.errors()} == {
        (("platform_base_url",), "missing"),
        (("organization_id",), "missing"),
    }


def test_defaults_use_the_shared_state_file_and_no_read_defaults() -> None:
    """Platform choice: state lives in .osbp/state/osbp.sqlite3 by default; no read defaults unless set."""
    settings = AdapterSettings(platform_base_url="http://127.0.0.1:8400", organization_id="carolyns_dental")
    assert settings.state_path == DEFAULT_STATE_PATH == Path(".osbp/state/osbp.sqlite3")
    assert (settings.connect_timeout_s, settings.read_timeout_s) == (5.0, 15.0)
    assert settings.default_service_id is None
    assert settings.platform_api_key is None
    assert settings.source == "osbp-local-mcp"


def test_the_adapter_reads_no_environment_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Platform choice: one settings object per process; the server reads OSBP_*, the adapter does not."""
    monkeypatch.setenv("OSBP_READ_TIMEOUT_S", "2.5")
    monkeypatch.setenv("OSBP_STATE_PATH", "elsewhere.sqlite3")
    settings = AdapterSettings(platform_base_url="http://127.0.0.1:8400", organization_id="carolyns_dental")
    assert settings.read_timeout_s == 15.0
    assert settings.state_path == DEFAULT_STATE_PATH


@pytest.mark.parametrize("url", ["ftp://platform.test", "127.0.0.1:8400", "http://"])
def test_the_platform_url_must_be_http_or_https(url: str) -> None:
    """Platform choice: the adapter speaks HTTP(S) to its platform and nothing else."""
    with pytest.raises(ValidationError):
        AdapterSettings(platform_base_url=url, organization_id="carolyns_dental")


def test_every_field_names_one_distinct_osbp_variable_and_credentials_have_no_flag() -> None:
    """Platform choice: each knob is one documented OSBP_* variable; secrets come from the environment."""
    settings = {
        name: next(m for m in field.metadata if isinstance(m, Setting))
        for name, field in AdapterSettings.model_fields.items()
    }
    assert set(settings) == set(AdapterSettings.model_fields)
    assert all(setting.env.startswith("OSBP_") for setting in settings.values())
    assert len({setting.env for setting in settings.values()}) == len(settings)
    assert settings["platform_api_key"].secret
    assert settings["platform_api_key"].flag is None
