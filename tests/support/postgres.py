"""The test session's throwaway PostgreSQL cluster: the one harness, shared with ``osbp bench``
(:mod:`osbp.bench.postgres` holds it; the tests import it from here, as every other support helper)."""

from osbp.bench.postgres import PostgresServer, database, pg_binaries, start_server, unavailable_reason

__all__ = ["PostgresServer", "database", "pg_binaries", "start_server", "unavailable_reason"]
