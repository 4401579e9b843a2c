"""Generated requests against the platform's own OpenAPI document, in process: never a 5xx."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from osbp.backend.app import create_app
from tests.support.bookwell import make_settings

# Generous quota so the fuzzer measures the API, not the limiter; webhooks paused, so the endpoints it
# registers (any loopback URL) are never sent to while schemathesis keeps the app's lifespan running.
APP = create_app(make_settings(rate_limit_quota=1_000_000, pause_webhooks=True))
SCHEMA = schemathesis.openapi.from_asgi("/openapi.json", APP)


@SCHEMA.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_generated_request_gets_a_server_error(case):
    """Platform choice (fuzzing): generated requests against the app's own OpenAPI → no 5xx."""
    case.call_and_validate(checks=[not_a_server_error])
