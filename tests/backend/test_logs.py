"""The platform's log pipeline: the keys every osbp process writes, plus the request being served."""

from __future__ import annotations

import io
import logging
import uuid

from fastapi.testclient import TestClient

from osbp.backend import logs as backend_logs
from osbp.server import logs as server_logs
from tests.support.logs import capture_logs, events, fields, json_lines, restored_root


def _one_line(configure, level: str, logger: str) -> dict[str, object]:
    stream = io.StringIO()
    with restored_root():
        configure(level, stream)
        logging.getLogger(logger).warning("sample_event", extra={"field": 1})
    [line] = json_lines(stream.getvalue())
    return line


def test_the_platform_writes_the_same_keys_and_level_names_as_the_server():
    """Platform choice (one log convention): both processes' lines have the same keys and level case."""
    platform = _one_line(backend_logs.configure_logging, "INFO", "osbp.backend")
    server = _one_line(server_logs.configure_logging, "INFO", "osbp.server")
    assert sorted(platform) == sorted(server) == ["event", "field", "level", "logger", "ts"]
    assert platform["level"] == server["level"] == "WARNING"
    assert platform["event"] == server["event"] == "sample_event"


def test_a_record_made_while_serving_carries_that_request_id(client: TestClient):
    """Platform choice: every platform log record of a request names its request id (X-Request-Id)."""
    request_id = str(uuid.uuid4())
    with capture_logs(root_level=logging.INFO) as records:
        response = client.get("/api/organizations/carolyns_dental", headers={"X-Request-Id": request_id})
    assert response.headers["x-request-id"] == request_id
    [record] = events(records, "request")
    logged = fields(record)
    assert isinstance(logged.pop("duration_ms"), float)
    assert logged == {
        "method": "GET",
        "path": "/api/organizations/carolyns_dental",
        "status": 200,
        "request_id": request_id,
    }
    [line] = json_lines(backend_logs.json_formatter().format(record))
    assert line["request_id"] == request_id


def test_the_platform_logs_other_libraries_records_as_json_lines_too():
    """Platform choice (one log pipeline per process): uvicorn's records are JSON lines like ours."""
    stream = io.StringIO()
    with restored_root():
        backend_logs.configure_logging("INFO", stream)
        logging.getLogger("uvicorn.error").warning("Invalid HTTP request received.")
    [line] = json_lines(stream.getvalue())
    assert (line["logger"], line["event"]) == ("uvicorn.error", "Invalid HTTP request received.")
