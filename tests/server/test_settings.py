"""ServerSettings: the MCP server process's one settings object, the adapter's part nested in it."""

from __future__ import annotations

import ast
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError

from osbp.adapter.settings import AdapterSettings
from osbp.backend.settings import BackendSettings, env_var
from osbp.protocol.store import DEFAULT_STATE_PATH
from osbp.server.cli import build_parser, load_settings
from osbp.server.confirmation import PerOrganization
from osbp.server.remote_settings import HttpSettings, OAuthSettings
from osbp.server.settings import AUDIT_KEY_RULE, ServerSettings, describe, environment, settings_of, variable

URL, ORG = "http://127.0.0.1:8400", "carolyns_dental"
#: Request-state keys as `secrets.token_hex(32)` makes them (fixed here: tests only, never secret).
GOOD_KEY = "44003de6770004fa7886c3516d481945e89a2334bc26224d645e2e99cdd5db7c"
OLD_KEY = "f9e688edf02a4032bb0ee23addae03c3f18a65b984228fcd5dbd381e91d309f6"
MODES = "auto, elicitation, page, token"

pytestmark = pytest.mark.usefixtures("no_osbp_environment")


def test_every_documented_variable_reaches_its_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Platform choice (docs/server.md, docs/adapter.md): each OSBP_* name keeps working, nested or not."""
    documented = {
        "OSBP_PLATFORM_BASE_URL": "https://platform.example",
        "OSBP_ORGANIZATION_ID": "gus_notary",
        "OSBP_STATE_PATH": "/var/lib/osbp/state.sqlite3",
        "OSBP_CONNECT_TIMEOUT_S": "1.5",
        "OSBP_READ_TIMEOUT_S": "2.5",
        "OSBP_DEFAULT_SERVICE_ID": "gus_notary_notarization",
        "OSBP_DEFAULT_SCHEDULE_ID": "gus_notary_main",
        "OSBP_PLATFORM_API_KEY": "sk_from_env",
        "OSBP_SOURCE": "host-marker",
        "OSBP_AUDIT_LOG_PATH": "/var/log/osbp/events.jsonl",
        "OSBP_AUDIT_KEY": GOOD_KEY,
        "OSBP_LOG_LEVEL": "DEBUG",
        "OSBP_ADAPTER_FACTORY": "tests.support.memory_adapter:build_memory_adapter",
        "OSBP_NOW": "2030-05-06T13:00:00Z",
        "OSBP_APPROVAL_TTL_SECONDS": "7.5",
    }
    for name, value in documented.items():
        monkeypatch.setenv(name, value)
    settings = ServerSettings()
    adapter = settings.adapter
    assert (adapter.platform_base_url, adapter.organization_id) == ("https://platform.example", "gus_notary")
    assert adapter.state_path == Path("/var/lib/osbp/state.sqlite3")
    assert (adapter.connect_timeout_s, adapter.read_timeout_s) == (1.5, 2.5)
    assert (adapter.default_service_id, adapter.default_schedule_id) == (
        "gus_notary_notarization",
        "gus_notary_main",
    )
    assert adapter.platform_api_key is not None
    assert adapter.platform_api_key.get_secret_value() == "sk_from_env"
    assert adapter.source == "host-marker"
    assert settings.audit_log_path == Path("/var/log/osbp/events.jsonl")
    assert settings.audit_key_bytes() == GOOD_KEY.encode()
    assert settings.log_level == "DEBUG"
    assert settings.adapter_factory == "tests.support.memory_adapter:build_memory_adapter"
    assert settings.now == datetime(2030, 5, 6, 13, 0, tzinfo=UTC)
    assert settings.approval_ttl() == timedelta(seconds=7.5)
    assert "sk_from_env" not in repr(settings)


def test_a_given_nested_value_wins_and_the_rest_still_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Platform choice: flags override variables one setting at a time, inside the adapter's part too."""
    monkeypatch.setenv("OSBP_PLATFORM_BASE_URL", URL)
    monkeypatch.setenv("OSBP_ORGANIZATION_ID", "from_env")
    monkeypatch.setenv("OSBP_READ_TIMEOUT_S", "3")
    settings = ServerSettings(adapter={"organization_id": "from_flag"})
    assert settings.adapter.organization_id == "from_flag"
    assert settings.adapter.platform_base_url == URL
    assert settings.adapter.read_timeout_s == 3.0


def test_the_state_file_has_one_default_the_adapters(monkeypatch: pytest.MonkeyPatch) -> None:
    """Platform choice: one set of defaults: the server's state file is the adapter's default."""
    monkeypatch.setenv("OSBP_PLATFORM_BASE_URL", URL)
    monkeypatch.setenv("OSBP_ORGANIZATION_ID", ORG)
    monkeypatch.setenv("OSBP_STATE_PATH", "")  # an empty variable counts as unset
    settings = ServerSettings()
    assert settings.adapter.state_path == DEFAULT_STATE_PATH == Path(".osbp/state/osbp.sqlite3")
    assert settings.audit_log_path == Path(".osbp/audit/events.jsonl")


def test_the_flags_are_the_documented_ones_each_naming_its_variable() -> None:
    """Platform choice (docs/server.md): flags come from the fields; each help names its variable."""
    options = {
        action.option_strings[0]: action.help or ""
        for action in build_parser()._actions
        if action.option_strings and action.dest != "help"
    }
    assert options.keys() == {
        "--platform-url",
        "--organization-id",
        "--state-path",
        "--audit-log-path",
        "--log-level",
        "--adapter",
        "--approval-ttl-seconds",
        "--confirmation",
        "--confirmation-for",
        "--state-retention-seconds",
        "--now",
        "--transport",
        "--host",
        "--port",
        "--allow-remote",
        "--allowed-hosts",
        "--allowed-origins",
        "--auth-issuer",
        "--auth-jwks",
        "--resource-url",
    }
    assert options["--platform-url"].endswith("[OSBP_PLATFORM_BASE_URL]")
    assert options["--state-path"].endswith("[OSBP_STATE_PATH]")
    assert options["--adapter"].endswith("[OSBP_ADAPTER_FACTORY]")
    # A default is shown where there is one; a required setting says so instead.
    assert "(default: WARNING) [OSBP_LOG_LEVEL]" in options["--log-level"]
    assert "(default: 8500) [OSBP_HTTP_PORT]" in options["--port"]
    assert "(required) [OSBP_ORGANIZATION_ID]" in options["--organization-id"]
    assert "default" not in options["--organization-id"]


def test_secrets_have_no_flag() -> None:
    """OSBP spec, Security: credentials and keys come from the environment only."""
    parser = build_parser()
    for flag in ("--audit-key", "--platform-api-key"):
        with pytest.raises(SystemExit):
            parser.parse_args(["--platform-url", URL, "--organization-id", ORG, flag, "x" * 40])


def test_a_rejected_secret_is_described_without_its_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """OSBP spec, Security: a refused key is named, never repeated."""
    monkeypatch.setenv("OSBP_AUDIT_KEY", "short-secret")
    with pytest.raises(ValidationError) as caught:
        ServerSettings(adapter={"platform_base_url": URL, "organization_id": ORG})
    assert describe(caught.value) == f"invalid configuration: OSBP_AUDIT_KEY must {AUDIT_KEY_RULE}"


def test_an_audit_key_that_is_a_placeholder_is_refused_without_its_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OSBP spec, Security: an audit key anyone could guess (a character or a block repeated) keys nothing."""
    for placeholder in ("a" * 32, "0123456789abcdef" * 2, "ab" * 20):
        monkeypatch.setenv("OSBP_AUDIT_KEY", placeholder)
        with pytest.raises(ValidationError) as caught:
            ServerSettings(adapter={"platform_base_url": URL, "organization_id": ORG})
        line = describe(caught.value)
        assert line == f"invalid configuration: OSBP_AUDIT_KEY must {AUDIT_KEY_RULE}"
        assert placeholder not in line


def test_a_short_request_state_key_is_refused_in_one_line_without_echoing_any_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Platform choice (MCP request state): the SDK's codec needs 32 bytes of secret for every key."""
    monkeypatch.setenv("OSBP_REQUEST_STATE_KEY", f"{GOOD_KEY},tooshort")
    with pytest.raises(ValidationError) as caught:
        ServerSettings(adapter={"platform_base_url": URL, "organization_id": ORG})
    line = describe(caught.value)
    assert line.startswith(
        "invalid configuration: OSBP_REQUEST_STATE_KEY must be one or more comma-separated"
    )
    assert "tooshort" not in line
    assert GOOD_KEY not in line


def test_the_request_state_key_ring_is_read_from_the_environment_first_key_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Platform choice (MCP request state): rotation as the SDK takes it, the first key seals."""
    monkeypatch.setenv("OSBP_REQUEST_STATE_KEY", f"{GOOD_KEY}, {OLD_KEY}")
    settings = ServerSettings(adapter={"platform_base_url": URL, "organization_id": ORG})
    assert settings.request_state_keys() == (GOOD_KEY, OLD_KEY)
    assert GOOD_KEY not in repr(settings)


def test_approval_tokens_live_ten_minutes_unless_configured() -> None:
    """OSBP spec, booking.create: "A token expires after a short TTL; the reference gate uses ten minutes"."""
    settings = ServerSettings(adapter={"platform_base_url": URL, "organization_id": ORG})
    assert settings.approval_ttl() == timedelta(minutes=10)
    assert ServerSettings(
        adapter={"platform_base_url": URL, "organization_id": ORG}, approval_ttl_seconds=5
    ).approval_ttl() == timedelta(seconds=5)


@pytest.mark.parametrize("value", ["0", "-1", "ten", "nan", "inf", "86401"])
def test_a_token_lifetime_that_is_not_a_positive_number_is_one_clear_line(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """Platform choice (docs/server.md): a bad OSBP_APPROVAL_TTL_SECONDS is named with its rule."""
    monkeypatch.setenv("OSBP_APPROVAL_TTL_SECONDS", value)
    with pytest.raises(ValidationError) as caught:
        ServerSettings(adapter={"platform_base_url": URL, "organization_id": ORG})
    assert describe(caught.value) == (
        "invalid configuration: --approval-ttl-seconds / OSBP_APPROVAL_TTL_SECONDS must be a positive number"
        f" of seconds, at most 86400 (a day) (got {value!r})"
    )


def test_confirmation_defaults_to_auto_and_reads_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Platform choice (docs/server.md): who confirms a booking is auto unless OSBP_CONFIRMATION says."""
    monkeypatch.setenv("OSBP_PLATFORM_BASE_URL", URL)
    monkeypatch.setenv("OSBP_ORGANIZATION_ID", ORG)
    assert ServerSettings().confirmation == "auto"
    monkeypatch.setenv("OSBP_CONFIRMATION", "elicitation")
    assert ServerSettings().confirmation == "elicitation"


def test_an_unknown_confirmation_mode_is_one_line_naming_the_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Platform choice: a bad --confirmation names the setting and the allowed values, no traceback."""
    monkeypatch.setenv("OSBP_PLATFORM_BASE_URL", URL)
    monkeypatch.setenv("OSBP_ORGANIZATION_ID", ORG)
    monkeypatch.setenv("OSBP_CONFIRMATION", "never")
    with pytest.raises(ValidationError) as caught:
        ServerSettings()
    message = describe(caught.value)
    assert "OSBP_CONFIRMATION" in message
    assert "elicitation" in message
    assert "\n" not in message


def test_confirmation_for_gives_some_organizations_their_own_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """Platform choice (docs/server.md): --confirmation-for ORG=MODE overrides --confirmation per merchant."""
    monkeypatch.setenv("OSBP_PLATFORM_BASE_URL", URL)
    monkeypatch.setenv("OSBP_ORGANIZATION_ID", "a,b,c")
    monkeypatch.setenv("OSBP_CONFIRMATION", "token")
    assert ServerSettings().confirmation_policy() == "token"
    monkeypatch.setenv("OSBP_CONFIRMATION_FOR", " b = elicitation , c=auto")
    policy = ServerSettings().confirmation_policy()
    assert policy == PerOrganization("token", {"b": "elicitation", "c": "auto"})


@pytest.mark.parametrize(
    ("served", "value", "expected"),
    [
        ("a,b", "z=token", "names z, which this server does not serve (--organization-id)"),
        ("a,b", "a=never", f"each item must be an organization id, = and a mode ({MODES})"),
        ("a,b", "a", f"each item must be an organization id, = and a mode ({MODES})"),
        ("a,b", "a=token,a=auto", "names a twice"),
    ],
)
def test_a_bad_confirmation_for_is_one_line_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch, served: str, value: str, expected: str
) -> None:
    """Platform choice: an unknown organization or mode in --confirmation-for is one line, no traceback."""
    monkeypatch.setenv("OSBP_PLATFORM_BASE_URL", URL)
    monkeypatch.setenv("OSBP_ORGANIZATION_ID", served)
    monkeypatch.setenv("OSBP_CONFIRMATION_FOR", value)
    with pytest.raises(ValidationError) as caught:
        ServerSettings()
    assert describe(caught.value) == (
        f"invalid configuration: --confirmation-for / OSBP_CONFIRMATION_FOR: {expected} (got {value!r})"
    )


def test_the_page_mode_is_required_anywhere_it_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """Platform choice (docs/server.md): page, everywhere or for one organization, requires the page."""
    monkeypatch.setenv("OSBP_PLATFORM_BASE_URL", URL)
    monkeypatch.setenv("OSBP_ORGANIZATION_ID", "a,b")
    assert ServerSettings().page_required() is False
    monkeypatch.setenv("OSBP_CONFIRMATION_FOR", "b=page")
    assert ServerSettings().confirmation_policy() == PerOrganization("auto", {"b": "page"})
    assert ServerSettings().page_required() is True
    monkeypatch.delenv("OSBP_CONFIRMATION_FOR")
    monkeypatch.setenv("OSBP_CONFIRMATION", "page")
    assert ServerSettings().page_required() is True


def test_the_state_retention_defaults_to_ten_minutes_and_reads_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Platform choice (docs/server.md): expired per-attempt state is kept ten minutes unless configured."""
    monkeypatch.setenv("OSBP_PLATFORM_BASE_URL", URL)
    monkeypatch.setenv("OSBP_ORGANIZATION_ID", ORG)
    assert ServerSettings().state_retention() == timedelta(minutes=10)
    monkeypatch.setenv("OSBP_STATE_RETENTION_SECONDS", "0")
    assert ServerSettings().state_retention() == timedelta(0)
    monkeypatch.setenv("OSBP_STATE_RETENTION_SECONDS", "-1")
    with pytest.raises(ValidationError) as caught:
        ServerSettings()
    assert describe(caught.value) == (
        "invalid configuration: --state-retention-seconds / OSBP_STATE_RETENTION_SECONDS must be a number of "
        "seconds from 0 to 86400 (a day) (got '-1')"
    )


def test_confirmation_for_names_any_organization_when_every_one_is_served(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Platform choice: with --organization-id * the platform's organizations are known only once serving."""
    monkeypatch.setenv("OSBP_PLATFORM_BASE_URL", URL)
    monkeypatch.setenv("OSBP_ORGANIZATION_ID", "*")
    monkeypatch.setenv("OSBP_CONFIRMATION_FOR", "phils_spa=elicitation")
    assert ServerSettings().confirmation_policy() == PerOrganization("auto", {"phils_spa": "elicitation"})


def test_the_log_level_is_case_insensitive_as_the_platforms_is() -> None:
    """Platform choice: `osbp mcp --log-level debug` is accepted, as `osbp backend --log-level debug` is."""
    loaded = load_settings(["--platform-url", URL, "--organization-id", ORG, "--log-level", "debug"])
    assert isinstance(loaded, ServerSettings)
    assert loaded.log_level == "DEBUG"
    rejected = load_settings(["--platform-url", URL, "--organization-id", ORG, "--log-level", "loud"])
    assert (
        rejected
        == "invalid configuration: --log-level / OSBP_LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR,"
        " CRITICAL (got 'LOUD')"
    )


def test_the_environment_of_a_constructed_settings_object_reads_back_to_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Platform choice (one way to name a setting): a process that starts a server names fields, and the
    variables `environment` derives give the child exactly those values, nested parts and secrets too."""
    now = datetime(2030, 5, 6, 13, 0, 0, 250_000, tzinfo=UTC)
    given = ServerSettings.model_construct(
        adapter=AdapterSettings.model_construct(
            platform_base_url=URL, organization_id=ORG, state_path=Path("/var/lib/osbp/state.sqlite3")
        ),
        http=HttpSettings.model_construct(port=8511, allow_remote=True),
        auth=OAuthSettings.model_construct(issuer="http://127.0.0.1:8600"),
        audit_log_path=Path("/var/log/osbp/events.jsonl"),
        audit_key=SecretStr(GOOD_KEY),
        approval_ttl_seconds=7.5,
        confirmation_for=None,
        now=now,
    )
    variables = environment(given)
    assert variables == {
        "OSBP_PLATFORM_BASE_URL": URL,
        "OSBP_ORGANIZATION_ID": ORG,
        "OSBP_STATE_PATH": "/var/lib/osbp/state.sqlite3",
        "OSBP_HTTP_PORT": "8511",
        "OSBP_HTTP_ALLOW_REMOTE": "true",
        "OSBP_AUTH_ISSUER": "http://127.0.0.1:8600",
        "OSBP_AUDIT_LOG_PATH": "/var/log/osbp/events.jsonl",
        "OSBP_AUDIT_KEY": GOOD_KEY,
        "OSBP_APPROVAL_TTL_SECONDS": "7.5",
        "OSBP_NOW": "2030-05-06T13:00:00.250000Z",
    }
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    read = ServerSettings()
    assert (read.adapter.platform_base_url, read.adapter.organization_id) == (URL, ORG)
    assert read.adapter.state_path == Path("/var/lib/osbp/state.sqlite3")
    assert (read.http.port, read.http.allow_remote, read.auth.issuer) == (8511, True, "http://127.0.0.1:8600")
    assert read.audit_key_bytes() == GOOD_KEY.encode()
    assert (read.approval_ttl_seconds, read.now, read.confirmation_for) == (7.5, now, None)


def test_every_setting_has_its_variable_in_the_environment_helper() -> None:
    """Platform choice: `environment` covers every setting, so no caller needs to spell one by hand."""
    leaves = settings_of(ServerSettings)
    assert len({leaf.setting.env for leaf in leaves}) == len(leaves)
    assert all(leaf.setting.env.startswith("OSBP_") for leaf in leaves)
    assert environment(ServerSettings.model_construct()) == {}


#: The modules that declare the server's settings, each variable once.
_DECLARING = {
    "adapter/osbp/adapter/settings.py",
    "server/osbp/server/remote_settings.py",
    "server/osbp/server/settings.py",
}
_SOURCE = ("protocol", "adapter", "server", "demo", "conformance", "osbp", "backend", "examples")


def test_no_module_spells_a_setting_variable_its_settings_object_names() -> None:
    """Platform choice (one way to name a setting): a caller that starts or reads a server or platform
    derives the variable from the settings object (`environment`, `variable`, `env_var`), never spells it."""
    repo = Path(__file__).resolve().parents[2]
    names = {leaf.setting.env for leaf in settings_of(ServerSettings)}
    names |= {env_var(field) for field in BackendSettings.model_fields}
    assert sorted(path for path in _DECLARING if not (repo / path).is_file()) == []
    spelled = []
    for folder in _SOURCE:
        for path in sorted((repo / folder).rglob("*.py")):
            relative = path.relative_to(repo).as_posix()
            if relative in _DECLARING:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            spelled += [
                f"{relative}:{node.lineno} {node.value}"
                for node in ast.walk(tree)
                if isinstance(node, ast.Constant) and node.value in names
            ]
    assert spelled == []
    assert variable("adapter.state_path") == "OSBP_STATE_PATH"
    with pytest.raises(KeyError, match=r"no setting 'adapter\.nope'"):
        variable("adapter.nope")
