"""The README's configuration tables list every setting of the MCP server and of the platform, by its
variable and flag as the code names them."""

from __future__ import annotations

import re
from pathlib import Path

from osbp.backend.settings import BackendSettings, env_var, flag
from osbp.server.settings import ServerSettings, settings_of

README = Path(__file__).resolve().parents[1] / "README.md"


def _table_rows(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if line.startswith("| "))


def missing_settings(text: str) -> list[str]:
    """Each setting (``VARIABLE`` or ``--flag``) the README's table rows do not name."""
    rows = _table_rows(text)
    named = set(re.findall(r"OSBP_[A-Z0-9_]+", rows))
    flags = set(re.findall(r"`(--[a-z0-9-]+)`", rows))
    wanted: list[tuple[str, str | None]] = [
        (leaf.setting.env, leaf.setting.flag) for leaf in settings_of(ServerSettings)
    ]
    wanted += [(env_var(field), flag(field)) for field in BackendSettings.model_fields]
    missing = [variable for variable, _ in wanted if variable not in named]
    missing += [switch for _, switch in wanted if switch is not None and switch not in flags]
    return missing


def test_every_setting_has_its_row_in_the_readme() -> None:
    """Platform choice: the README's configuration tables are complete (a new setting needs its row)."""
    assert missing_settings(README.read_text(encoding="utf-8")) == []


def test_a_setting_without_its_row_is_named() -> None:
    """Platform choice: the check fails, naming the variable and the flag, when a row is dropped."""
    text = README.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `--approval-ttl-seconds`"))
    assert missing_settings(text.replace(row + "\n", "")) == [
        "OSBP_APPROVAL_TTL_SECONDS",
        "--approval-ttl-seconds",
    ]
