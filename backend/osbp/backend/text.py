"""Free text the platform accepts: any Unicode except control characters.

Names, metadata, ids and the other strings of a request body are one-line values shown to people and
written to logs, receipts and SMS texts, so none may carry a control character: C0 (U+0000-U+001F, tab,
line feed and carriage return included), DEL (U+007F) and C1 (U+0080-U+009F), Unicode category `Cc`.
Everything else passes: letters of every script, accents, emoji and the zero-width joiners emoji
sequences are made of. A refusal is a validation error like any other (400 `invalid_request`, the field
named in `errors`), and the OpenAPI document carries the rule as a `pattern`.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

__all__ = ["NO_CONTROL_PATTERN", "PlainText", "first_control_character"]

#: The rule as an ECMA-262 pattern for the OpenAPI document.
NO_CONTROL_PATTERN = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"


def first_control_character(value: str) -> int | None:
    """The index of the first control character (category Cc) in `value`, or None."""
    for index, character in enumerate(value):
        if unicodedata.category(character) == "Cc":
            return index
    return None


def _no_control(value: str) -> str:
    index = first_control_character(value)
    if index is not None:
        raise PydanticCustomError(
            "control_character",
            "must not contain control characters (found U+{code} as character {position})",
            {"code": f"{ord(value[index]):04X}", "position": index + 1},
        )
    return value


class _NoControlCharacters:
    """Pydantic metadata: refuse control characters after the string's own checks; document the pattern."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_after_validator_function(_no_control, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        json_schema = handler(schema)
        json_schema["pattern"] = NO_CONTROL_PATTERN
        return json_schema


#: A request string without control characters.
PlainText = Annotated[str, _NoControlCharacters()]
