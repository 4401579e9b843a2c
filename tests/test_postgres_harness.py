"""The throwaway PostgreSQL the engine-parametrised suites run on."""

from __future__ import annotations

import psycopg
import pytest

from osbp.bench import postgres
from tests.support.postgres import PostgresServer


@pytest.mark.integration
def test_a_fresh_database_accepts_connections_and_offers_btree_gist(postgres_url: str) -> None:
    """Platform choice: every PostgreSQL test gets an empty database on a loopback cluster, with the
    btree_gist extension the platform's exclusion constraint needs."""
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("CREATE EXTENSION IF NOT EXISTS btree_gist")
        tables = connection.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchone()
        version = connection.execute("SHOW server_version_num").fetchone()
    assert tables == (0,)
    assert version is not None
    assert int(version[0]) >= 150000


@pytest.mark.integration
def test_the_cluster_listens_on_loopback_only(postgres_server: PostgresServer) -> None:
    """Rules of this place: test servers bind to loopback only."""
    with psycopg.connect(postgres_server.url(), autocommit=True) as connection:
        row = connection.execute("SHOW listen_addresses").fetchone()
    assert row == ("127.0.0.1",)


def test_a_machine_without_postgresql_gets_one_line_saying_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Platform choice: where no server binaries exist, the reason names them in one line."""
    monkeypatch.setattr(postgres, "pg_binaries", lambda: None)
    reason = postgres.unavailable_reason()
    assert reason is not None
    assert "initdb and pg_ctl" in reason
    assert "\n" not in reason
