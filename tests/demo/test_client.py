"""The demo's MCP server configuration: what one server subprocess is told through its environment."""

from pathlib import Path

from osbp.demo.client import ServerConfig


def test_the_confirmation_policy_reaches_the_server_by_its_variables(tmp_path: Path) -> None:
    """Platform choice (docs/server.md): the demo's one server confirms per merchant (--confirmation-for)."""
    config = ServerConfig(
        "http://127.0.0.1:9",
        "carolyns_dental,phils_spa",
        tmp_path / "state.sqlite3",
        tmp_path / "audit.jsonl",
        confirmation="token",
        confirmation_for="phils_spa=elicitation",
    )
    environment = config.environment()
    assert environment["OSBP_ORGANIZATION_ID"] == "carolyns_dental,phils_spa"
    assert environment["OSBP_CONFIRMATION"] == "token"
    assert environment["OSBP_CONFIRMATION_FOR"] == "phils_spa=elicitation"


def test_a_server_without_a_policy_keeps_its_default(tmp_path: Path) -> None:
    """Platform choice: nothing is set that the demo did not choose (the gallery's servers keep auto)."""
    environment = ServerConfig("http://127.0.0.1:9", "org", tmp_path / "s", tmp_path / "a").environment()
    assert "OSBP_CONFIRMATION" not in environment
    assert "OSBP_CONFIRMATION_FOR" not in environment
