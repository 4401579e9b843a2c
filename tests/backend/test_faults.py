"""Failure modes on demand against the real platform under uvicorn: each mode on the wire, the surface."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from osbp.backend.serving import PlatformServer
from tests.support.bookwell import booking
from tests.support.logs import capture_logs, events, fields

pytestmark = pytest.mark.integration

CREATE = "/api/organizations/carolyns_dental/appointments"
ORGANIZATION = "/api/organizations/carolyns_dental"


@pytest.fixture
def client(platform_server: PlatformServer) -> Iterator[httpx2.Client]:
    """A client of the real platform with a short read timeout (a held request gives up quickly)."""
    with httpx2.Client(base_url=platform_server.base_url, trust_env=False, timeout=5.0) as http:
        yield http


def put_faults(client: httpx2.Client, *rules: dict[str, Any], seed: int = 0) -> dict[str, Any]:
    """Put the rules in force (the PUT must succeed)."""
    response = client.put("/_testing/faults", json={"seed": seed, "rules": list(rules)})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def stats(client: httpx2.Client) -> dict[str, Any]:
    """The platform's counters for Carolyn's Dental."""
    body: dict[str, Any] = client.get("/_testing/stats", params={"organization_id": "carolyns_dental"}).json()
    return body


def create(client: httpx2.Client, key: str, **options: Any) -> httpx2.Response:
    """One appointment create with ``key``."""
    return client.post(CREATE, json=booking(), headers={"Idempotency-Key": key}, **options)


@pytest.mark.parametrize("mode", ["reset", "timeout"])
def test_a_dropped_create_answers_nothing_and_books_nothing(client, mode):
    """Platform choice (fault profile): reset aborts the connection, timeout holds until the client gives
    up; neither request is handled, so the retry with the same key creates the one appointment."""
    put_faults(client, {"endpoint": "create_appointment", "mode": mode, "count": 1})
    with pytest.raises(httpx2.TransportError):
        create(client, "k-1", timeout=0.3)
    assert stats(client)["appointments"] == 0
    retried = create(client, "k-1")
    assert (retried.status_code, retried.headers.get("idempotent-replayed")) == (201, None)
    assert (stats(client)["appointments"], stats(client)["create_requests"]) == (1, 2)


def test_a_lost_response_commits_the_create_and_the_same_key_replays_the_stored_201(client):
    """IETF httpapi idempotency-key draft: the create committed before the connection dropped; the retry
    with the same key replays the stored 201 instead of booking again."""
    put_faults(client, {"endpoint": "create_appointment", "mode": "lost_response", "count": 1})
    with pytest.raises(httpx2.RemoteProtocolError):
        create(client, "k-lost")
    assert stats(client)["appointments"] == 1
    replay = create(client, "k-lost")
    assert (replay.status_code, replay.headers["idempotent-replayed"]) == (201, "true")
    assert stats(client)["appointments"] == 1


@pytest.mark.parametrize(
    ("status", "code"), [(500, "internal_error"), (502, "bad_gateway"), (503, "service_unavailable")]
)
@pytest.mark.parametrize("retry_after", [None, 2])
def test_an_error_fault_answers_problem_json_with_and_without_retry_after(client, status, code, retry_after):
    """RFC 9457 / RFC 9110 section 10.2.3: a faulted 5xx is problem+json with the platform's headers, and
    Retry-After only when the rule gives one; nothing is booked."""
    rule: dict[str, Any] = {"endpoint": "create_appointment", "mode": "error", "status": status}
    if retry_after is not None:
        rule["retry_after"] = retry_after
    put_faults(client, rule)
    failed = create(client, "k-err")
    assert (failed.status_code, failed.json()["code"]) == (status, code)
    assert failed.headers["content-type"] == "application/problem+json"
    assert failed.headers["x-request-id"] == failed.json()["request_id"]
    assert failed.headers.get("retry-after") == (None if retry_after is None else str(retry_after))
    assert stats(client)["appointments"] == 0


def test_a_429_burst_carries_a_spent_ratelimit_and_then_passes(client):
    """draft-ietf-httpapi-ratelimit-headers: the burst's 429s say r=0 and when to retry; after the first N
    the requests pass."""
    put_faults(client, {"mode": "rate_limited", "retry_after": 3, "count": 2})
    burst = [client.get(ORGANIZATION) for _ in range(3)]
    assert [response.status_code for response in burst] == [429, 429, 200]
    limited = burst[0]
    assert limited.json()["code"] == "rate_limited"
    assert (limited.headers["retry-after"], limited.headers["ratelimit"]) == ("3", '"default";r=0;t=3')
    assert limited.headers["ratelimit-policy"] == '"default";q=1000;w=60'


def test_latency_delays_the_answer_by_at_least_the_fixed_part(client):
    """Platform choice (fault profile): added latency, then the request is served normally."""
    put_faults(client, {"endpoint": "read_organization", "mode": "latency", "latency_ms": 150})
    started = time.perf_counter()
    response = client.get(ORGANIZATION)
    assert response.status_code == 200
    assert time.perf_counter() - started >= 0.15


def test_a_slow_commit_holds_the_write_lock_so_concurrent_creates_queue_behind_it(client):
    """Platform choice (fault profile): slow_commit holds the transaction (and its write lock) open before
    the commit, so two concurrent creates run one after the other, and the slot goes to exactly one."""
    put_faults(client, {"endpoint": "create_appointment", "mode": "slow_commit", "hold_ms": 300, "count": 2})
    answers: dict[str, tuple[int, float]] = {}

    def send(key: str) -> None:
        started = time.perf_counter()
        status = create(client, key).status_code
        answers[key] = (status, time.perf_counter() - started)

    threads = [threading.Thread(target=send, args=(key,)) for key in ("k-slow-1", "k-slow-2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(status for status, _ in answers.values()) == [201, 409]
    # The later one waited out the earlier one's held lock, then held its own: serialised, not parallel.
    assert max(elapsed for _, elapsed in answers.values()) >= 0.55
    assert stats(client)["appointments"] == 1


def test_rules_apply_only_to_their_organization_and_endpoint(client):
    """Platform choice (fault profile): per organization and per endpoint scoping on the wire."""
    put_faults(
        client,
        {"organization_id": "gus_notary", "mode": "error"},
        {"endpoint": "GET /api/organizations/{organization_id}/services", "mode": "error", "status": 502},
    )
    assert client.get("/api/organizations/gus_notary").status_code == 503
    assert client.get(ORGANIZATION).status_code == 200
    assert client.get(ORGANIZATION + "/services").status_code == 502
    assert create(client, "k-scoped").status_code == 201


def test_the_surface_reads_puts_clears_and_reset_clears_the_profile(client):
    """Platform choice (test surface): PUT/GET/DELETE /_testing/faults; /_testing/reset clears faults too."""
    put_faults(client, {"endpoint": "read_organization", "mode": "error", "count": 5}, seed=11)
    client.get(ORGANIZATION)
    seen = client.get("/_testing/faults").json()
    assert (seen["seed"], seen["rules"][0]["mode"], seen["hits"]) == (11, "error", [1])
    assert client.delete("/_testing/faults").json() == {"seed": 0, "rules": [], "hits": []}
    assert client.get(ORGANIZATION).status_code == 200
    put_faults(client, {"mode": "error"})
    assert client.post("/_testing/reset").status_code == 200
    assert client.get("/_testing/faults").json()["rules"] == []
    assert client.get(ORGANIZATION).status_code == 200


def test_the_testing_surface_itself_is_never_faulted(client):
    """Platform choice (fault profile): a rule for every endpoint cannot lock the tester out."""
    put_faults(client, {"mode": "reset"})
    assert client.get("/_testing/faults").status_code == 200
    assert client.delete("/_testing/faults").status_code == 200


@pytest.mark.parametrize(
    ("rules", "fragment"),
    [
        ([{"mode": "explode"}], "body.rules.0.mode"),
        ([{"mode": "reset", "status": 502}], "mode 'reset' takes no status"),
        ([{"endpoint": "book_everything", "mode": "reset"}], "unknown endpoint 'book_everything'"),
    ],
)
def test_a_bad_profile_is_a_400_problem_and_changes_nothing(client, rules, fragment):
    """Platform choice (test surface): bad input is 400 problem+json, and the profile in force stays."""
    put_faults(client, {"endpoint": "read_organization", "mode": "error"})
    refused = client.put("/_testing/faults", json={"rules": rules})
    assert (refused.status_code, refused.json()["code"]) == (400, "invalid_request")
    assert fragment in refused.json()["detail"]
    assert client.get("/_testing/faults").json()["rules"][0]["endpoint"] == "read_organization"


def test_each_hit_is_logged_with_its_mode_and_rule(client):
    """Platform choice (structured logs): the operator sees which rule faulted which request."""
    put_faults(client, {"endpoint": "read_organization", "mode": "error"})
    with capture_logs(logging.INFO) as records:
        client.get(ORGANIZATION)
    [record] = events(records, "fault_injected")
    assert fields(record) | {"request_id": None} == {
        "mode": "error",
        "rule": 0,
        "method": "GET",
        "path": ORGANIZATION,
        "organization_id": "carolyns_dental",
        "request_id": None,
    }


def test_a_run_wide_profile_from_the_command_line_faults_from_the_first_request(tmp_path):
    """Platform choice (fault profile): `osbp backend --faults FILE --fault-seed N` for a whole run."""
    profile = tmp_path / "faults.json"
    profile.write_text(
        json.dumps({"rules": [{"endpoint": "read_organization", "mode": "error", "count": 1}]})
    )
    command = [sys.executable, "-m", "osbp", "backend", "--db", ":memory:", "--port", "0", "--enable-testing"]
    command += ["--faults", str(profile), "--fault-seed", "5"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        base_url = json.loads(process.stdout.readline())["base_url"]
        with httpx2.Client(base_url=base_url, trust_env=False) as http:
            assert http.get(ORGANIZATION).status_code == 503
            assert http.get(ORGANIZATION).status_code == 200
            assert http.get("/_testing/faults").json()["seed"] == 5
    finally:
        process.terminate()
        process.communicate(timeout=30)


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--faults", "{nope"], "osbp backend: --faults {nope: the fault profile is not JSON: "),
        (
            ["--faults", '{"rules": [{"endpoint": "nope", "mode": "reset"}]}'],
            'osbp backend: --faults {"rules": [{"endpoint": "nope", "mode": "reset"}]}: fault profile '
            "rules.0.endpoint: unknown endpoint 'nope'",
        ),
    ],
)
def test_a_bad_run_wide_profile_is_one_line_naming_the_flag(flags, expected):
    """Platform choice (CLI): a bad --faults value is one stderr line and exit status 2, no traceback."""
    command = [sys.executable, "-m", "osbp", "backend", "--db", ":memory:", "--port", "0", *flags]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2
    assert result.stderr.startswith(expected)
    assert result.stderr.count("\n") == 1


def arm(client: httpx2.Client, outcome: str) -> None:
    """Arm ``outcome`` for Carolyn's Dental through the scenario hook (the POST must succeed)."""
    armed = client.post("/_testing/arm", json={"organization_id": "carolyns_dental", "outcome": outcome})
    assert armed.json() == {"organization_id": "carolyns_dental", "armed": outcome}


def test_armed_lost_response_applies_every_create_and_drops_its_answer_until_reachable(client):
    """Contract with the conformance battery (docs/conformance.md, scenario URL): `lost_response` books
    each create of the organization and drops its answer, retries under the same key included, until
    `reachable`; then the same key replays the one appointment."""
    arm(client, "lost_response")
    for _ in range(2):
        with pytest.raises(httpx2.RemoteProtocolError):
            create(client, "k-lost-armed")
    assert client.get("/api/organizations/gus_notary").status_code == 200
    assert (stats(client)["appointments"], stats(client)["create_requests"]) == (1, 2)
    arm(client, "reachable")
    assert client.get("/_testing/faults").json()["rules"] == []
    replay = create(client, "k-lost-armed")
    assert (replay.status_code, replay.headers["idempotent-replayed"]) == (201, "true")
    assert stats(client)["appointments"] == 1


def test_armed_slow_holds_only_the_next_create_and_can_be_armed_again(client):
    """Contract with the conformance battery (scenario URL): `slow` serves the organization's next create
    after about two seconds, the one after it at once; arming again slows the next one again."""
    for round_, (first, second) in enumerate([("09:00", "10:00"), ("11:00", "13:00")]):
        arm(client, "slow")
        started = time.monotonic()
        slow = client.post(CREATE, json=booking(time=first), headers={"Idempotency-Key": f"k-slow-{round_}"})
        held = time.monotonic() - started
        fast = client.post(CREATE, json=booking(time=second), headers={"Idempotency-Key": f"k-fast-{round_}"})
        assert (slow.status_code, fast.status_code) == (201, 201)
        assert held >= 1.9
        assert time.monotonic() - started - held < 1.5
    assert stats(client)["appointments"] == 4


def _arm_change(client: httpx2.Client, outcome: str, operation: str) -> None:
    body = {"organization_id": "carolyns_dental", "outcome": outcome, "operation": operation}
    assert client.post("/_testing/arm", json=body).json() == {
        "organization_id": "carolyns_dental",
        "armed": outcome,
    }


def _change(client: httpx2.Client, appointment_id: str, operation: str, key: str) -> httpx2.Response:
    path = f"{CREATE}/{appointment_id}/{operation}"
    slot = {
        "location_id": "carolyns_dental_midtown",
        "provider_id": "carolyns_dental_dr_reyes",
        "date": "2026-05-05",
    }
    body = slot | {"time": "13:00"} if operation == "reschedule" else None
    return client.post(path, json=body, headers={"Idempotency-Key": key})


@pytest.mark.parametrize(
    ("operation", "event"), [("reschedule", "appointment.rescheduled"), ("cancel", None)]
)
def test_an_armed_lost_response_commits_a_change_once_and_the_same_key_replays_it(client, operation, event):
    """docs/lifecycle.md (crash safety): the change committed before its answer was lost; the retry under
    the same key after `reachable` replays it, and the appointment changed exactly once."""
    appointment_id = create(client, "k-book").json()["id"]
    _arm_change(client, "lost_response", operation)
    assert client.get(f"{CREATE}/{appointment_id}").status_code == 200  # other routes are served
    for _ in range(2):
        with pytest.raises(httpx2.RemoteProtocolError):
            _change(client, appointment_id, operation, "k-change")
    changed = client.get(f"{CREATE}/{appointment_id}").json()
    assert changed["version"] == 2
    _arm_change(client, "reachable", operation)
    replay = _change(client, appointment_id, operation, "k-change")
    assert (replay.status_code, replay.headers["idempotent-replayed"]) == (200, "true")
    assert replay.json()["version"] == 2
    assert client.get(f"{CREATE}/{appointment_id}").json() == changed
    assert (stats(client)["appointments"], stats(client)["active_appointments"]) == (
        1,
        1 if operation == "reschedule" else 0,
    )


def test_an_armed_slow_reschedule_holds_its_commit_and_a_concurrent_duplicate_replays_it(client):
    """docs/lifecycle.md (slow commit): the next reschedule holds the write lock two seconds before its
    commit; its duplicate under the same key waits for it and replays the one move."""
    appointment_id = create(client, "k-book").json()["id"]
    _arm_change(client, "slow", "reschedule")
    answers: list[httpx2.Response] = []
    with httpx2.Client(base_url=str(client.base_url), trust_env=False, timeout=30.0) as slow_client:
        started = time.monotonic()
        first = threading.Thread(
            target=lambda: answers.append(_change(slow_client, appointment_id, "reschedule", "k"))
        )
        first.start()
        deadline = time.monotonic() + 10
        while client.get("/_testing/faults").json()["hits"] != [1] and time.monotonic() < deadline:
            pass  # the rule has hit once the first reschedule is being served
        with httpx2.Client(base_url=str(client.base_url), trust_env=False, timeout=30.0) as other:
            duplicate = _change(other, appointment_id, "reschedule", "k")
        first.join(timeout=30)
        held = time.monotonic() - started
    assert held >= 1.9
    assert [answer.status_code for answer in answers] == [200]
    assert duplicate.status_code == 200
    assert {answers[0].headers.get("idempotent-replayed"), duplicate.headers.get("idempotent-replayed")} == {
        None,
        "true",
    }
    assert client.get(f"{CREATE}/{appointment_id}").json()["version"] == 2
