"""AdapterSettings: one settings object read from the OSBP_* environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from osbp.adapter import AdapterSettings
from osbp.protocol.store import DEFAULT_STATE_PATH


def test_settings_read_the_osbp_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Platform choice: every adapter knob is an OSBP_<FIELD> variable; credentials come from env only."""
    monkeypatch.setenv("OSBP_PLATFORM_BASE_URL", "http://127.0.0.1:9999")
    monkeypatch.setenv("OSBP_ORGANIZATION_ID", "gus_notary")
    monkeypatch.setenv("OSBP_STATE_PATH", "state/x.sqlite3")
    monkeypatch.setenv("OSBP_READ_TIMEOUT_S", "2.5")
    monkeypatch.setenv("OSBP_DEFAULT_SERVICE_ID", "gus_notary_notarization")
    monkeypatch.setenv("OSBP_PLATFORM_API_KEY", "sk_from_env")
    monkeypatch.setenv("OSBP_AUDIT_LOG_PATH", "another/component.jsonl")  # another component's variable
    settings = AdapterSettings()
    assert settings.platform_base_url == "http://127.0.0.1:9999"
    assert settings.organization_id == "gus_notary"
    assert settings.state_path == Path("state/x.sqlite3")
    assert settings.read_timeout_s == 2.5
    assert settings.default_service_id == "gus_notary_notarization"
    assert settings.platform_api_key is not None
    assert settings.platform_api_key.get_secret_value() == "sk_from_env"


def test_defaults_target_the_local_platform_and_the_shared_state_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 3: state lives in .osbp/state/osbp.sqlite3 by default; no read defaults unless configured."""
    for name in (
        "OSBP_PLATFORM_BASE_URL",
        "OSBP_STATE_PATH",
        "OSBP_DEFAULT_SERVICE_ID",
        "OSBP_PLATFORM_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    settings = AdapterSettings()
    assert settings.platform_base_url == "http://127.0.0.1:8400"
    assert settings.state_path == DEFAULT_STATE_PATH
    assert settings.default_service_id is None
    assert settings.platform_api_key is None
