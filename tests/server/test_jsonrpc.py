"""The one rule for JSON-RPC messages the MCP SDK cannot read (osbp.server.jsonrpc), stdio's and HTTP's."""

from __future__ import annotations

import json

import pytest

from osbp.server.jsonrpc import Rejection, screen
from tests.support.jsonrpc import REQUEST, holding, request

#: A cut emoji from a JavaScript host: the high half of U+1F600 alone.
LONE = holding('"\\udfff"')


@pytest.mark.parametrize(
    "line",
    [
        REQUEST,
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        '{"jsonrpc":"2.0","id":1,"result":{}}',
        '{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}',
        holding('"\\ud83d\\ude00"'),  # a paired escape: one emoji
        "\n",
    ],
)
def test_a_line_the_sdk_reads_is_not_rejected(line: str) -> None:
    """JSON-RPC 2.0 §4, §5: valid requests, notifications and responses pass through untouched."""
    assert screen(line) is None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("garbage", Rejection(-32700, "not_json", None)),
        ('{"jsonrpc":"2.0","id":7,', Rejection(-32700, "not_json", None)),
        (holding("Infinityish"), Rejection(-32700, "not_json", None)),
        (LONE, Rejection(-32700, "lone_surrogate", 7)),
        (holding('"\\ud800"', id="HOLE"), Rejection(-32700, "lone_surrogate", None)),
        (holding("[" * 300 + "]" * 300), Rejection(-32700, "too_deep", 7)),
        ("[" * 100_000 + "]" * 100_000, Rejection(-32700, "too_deep", None)),
        ("{}", Rejection(-32600, "not_a_request", None)),
        ("[]", Rejection(-32600, "batch", None)),
        (f"[{REQUEST},{REQUEST}]", Rejection(-32600, "batch", None, batch_ids=(7,))),
        ("42", Rejection(-32600, "not_a_request", None)),
        (request(params="x"), Rejection(-32600, "not_a_request", 7)),
        (request(jsonrpc="1.0"), Rejection(-32600, "not_a_request", 7)),
        (request(jsonrpc=...), Rejection(-32600, "not_a_request", 7)),
        (request(id="req-1", method=3), Rejection(-32600, "not_a_request", "req-1")),
        (request(id=True, params="x"), Rejection(-32600, "not_a_request", None)),
        (request(id=1.5, params="x"), Rejection(-32600, "not_a_request", None)),
        (request(id={"a": 1}, params="x"), Rejection(-32600, "not_a_request", None)),
        ('{"jsonrpc":"2.0","id":7,"result":"x"}', Rejection(-32600, "not_a_request", None)),
        (request(id=..., params="x"), Rejection(-32600, "not_a_request", None)),
        (request(id=..., method=1), Rejection(-32600, "not_a_request", None)),
        (request(id=..., params=[1]), Rejection(-32600, "not_a_request", None, answered=False)),
    ],
)
def test_a_line_the_sdk_cannot_read_gets_its_code_and_id(line: str, expected: Rejection) -> None:
    """JSON-RPC 2.0 §5.1: -32700 for text that is not (I-)JSON, -32600 for JSON that is no request;
    the id when it can be read, else null; a valid notification (§4.1) is never answered."""
    assert screen(line) == expected


def test_the_error_response_is_json_rpc_2_0_with_the_standard_message() -> None:
    """JSON-RPC 2.0 §5.1: the code's standard message, and "id" present even when null."""
    wire = json.loads(
        Rejection(-32700, "not_json", None).response().model_dump_json(by_alias=True, exclude_unset=True)
    )
    assert wire == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error: the line is not JSON"},
    }
    invalid = Rejection(-32600, "batch", "a").response()
    assert (invalid.id, invalid.error.code) == ("a", -32600)
    assert invalid.error.message.startswith("Invalid Request: ")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (f"[{request(id=2)},{request(id='b')},{request(id=2)}]", (2, "b")),
        (f"[{request(id=...)},{request(id=True)},1]", ()),
        ('[{"jsonrpc":"2.0","id":3,"result":{}}]', ()),
    ],
)
def test_a_batch_is_refused_once_per_request_id_it_holds(line: str, expected: tuple[object, ...]) -> None:
    """JSON-RPC 2.0 §5 and MCP 2025-06-18 (no batching): a host waits on each request id it sent, so each
    gets its own -32600 (once); a batch without one gets a single error with id null."""
    rejection = screen(line)
    assert rejection is not None
    assert rejection.batch_ids == expected
    answered = [(response.id, response.error.code) for response in rejection.responses()]
    assert answered == ([(item, -32600) for item in expected] or [(None, -32600)])


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (holding(DEEP), 7),
        (holding(DEEP, id="x"), "x"),
        ('{"method":"ping","params":' + '{"a":' * 100_000 + "1" + "}" * 100_000 + ',"id":5}', 5),
        ('{ "params" : {"t": "]}\\"[", "a": ' + DEEP + '} , "id" : 9 }', 9),
        ('{"jsonrpc":"2.0","id":1,"result":' + DEEP + "}", None),
        ('{"id":' + DEEP + "}", None),
        (holding(DEEP)[:-1], 7),  # cut short: the id it named before still stands
        (holding("[" * 2000 + "[]," * 60_000 + "1" + "]" * 2000), 7),  # too many tokens to skip
        ('{"params":' + DEEP, None),
        (DEEP, None),
    ],
)
def test_a_message_too_deep_for_any_parser_is_still_answered_with_its_top_level_id(
    line: str, expected: object
) -> None:
    """JSON-RPC 2.0 §5: the error names the request's id when it can be read; nesting past Python's own
    recursion limit does not hide an id written at the top level (strings holding brackets included)."""
    assert screen(line) == Rejection(-32700, "too_deep", expected)  # type: ignore[arg-type]
