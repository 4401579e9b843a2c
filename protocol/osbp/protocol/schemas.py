"""JSON Schemas of the eight tool inputs and their result envelopes, generated from the models.

The checked-in files under ``protocol/schemas/`` are the published contract; ``python -m
osbp.protocol.schemas`` regenerates them (``--check`` fails on drift, as the test suite does). Files:
``<tool>.input.json`` and ``<tool>.result.json`` (the success/failure envelope union) per dotted tool name.

Schemas follow the wire promises of :mod:`osbp.protocol.models`: absent optionals are simply not
``required`` (never ``null``), objects are closed (``additionalProperties: false``) and types are exact.
Validator-owned mandate rules (offsets, missing id, empty provider_id) are deliberately not schema rules.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from osbp.protocol.models import FailureEnvelope, SuccessEnvelope
from osbp.protocol.tools import TOOLS, tool_spec

__all__ = ["SCHEMA_DIALECT", "SCHEMA_DIR", "all_schemas", "main", "tool_input_schema", "tool_result_schema"]

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: Where the checked-in schemas live (inside the package, shipped as package data).
SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"


class _WireSchema(GenerateJsonSchema):
    """Pydantic's generator, minus the ``null`` branches and ``default: null`` of absent-able fields."""

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        """An optional field is omitted on the wire, never null: describe only the value."""
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        """Drop ``default: null``; keep real defaults (e.g. ``ok: true``)."""
        if schema.get("default", object()) is None:
            return self.generate_inner(schema["schema"])
        return super().default_schema(schema)

    def field_is_required(
        self,
        field: core_schema.ModelField | core_schema.DataclassField | core_schema.TypedDictField,
        total: bool,
    ) -> bool:
        """In results a field with a real default is always emitted; only None-default ones may be absent."""
        if self.mode == "serialization":
            inner = field["schema"]
            return inner["type"] != "default" or inner.get("default") is not None
        return super().field_is_required(field, total)


def _plain_prose(node: Any) -> Any:
    # Descriptions come from docstrings; agents read them, so drop the reST literal markup.
    if isinstance(node, dict):
        return {
            key: value.replace("``", "`")
            if key == "description" and isinstance(value, str)
            else _plain_prose(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_plain_prose(item) for item in node]
    return node


def _generate(target: Any, mode: Literal["validation", "serialization"]) -> dict[str, Any]:
    generated = TypeAdapter(target).json_schema(schema_generator=_WireSchema, mode=mode)
    return {"$schema": SCHEMA_DIALECT, **_plain_prose(generated)}


@cache
def _input_schema(name: str) -> dict[str, Any]:
    return _generate(tool_spec(name).input_model, "validation")


@cache
def _result_schema(name: str) -> dict[str, Any]:
    spec = tool_spec(name)
    envelope = SuccessEnvelope[spec.value_type] | FailureEnvelope  # type: ignore[name-defined]
    schema = _generate(envelope, "serialization")
    schema["title"] = f"{spec.name} result"
    # Both envelope branches are objects; saying so at the root is what MCP requires of an outputSchema.
    schema["type"] = "object"
    return schema


def tool_input_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of a tool's input (dotted or MCP name), e.g. for an MCP ``inputSchema``."""
    return copy.deepcopy(_input_schema(tool_spec(name).name))


def tool_result_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of a tool's result envelope (success with its value, or failure)."""
    return copy.deepcopy(_result_schema(tool_spec(name).name))


def all_schemas() -> dict[str, dict[str, Any]]:
    """Every published schema by file name."""
    out: dict[str, dict[str, Any]] = {}
    for name in TOOLS:
        out[f"{name}.input.json"] = tool_input_schema(name)
        out[f"{name}.result.json"] = tool_result_schema(name)
    return out


def render(schema: dict[str, Any]) -> str:
    """The checked-in text form of a schema (stable: sorted keys, two-space indent, final newline)."""
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Write the schemas into ``protocol/schemas/`` (or ``--out``); ``--check`` reports drift instead."""
    parser = argparse.ArgumentParser(
        prog="python -m osbp.protocol.schemas", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", type=Path, default=SCHEMA_DIR, help="target directory")
    parser.add_argument("--check", action="store_true", help="fail if the files differ from the models")
    args = parser.parse_args(argv)
    drift: list[str] = []
    expected = {name: render(schema) for name, schema in all_schemas().items()}
    if not args.check:
        args.out.mkdir(parents=True, exist_ok=True)
    for file_name, text in expected.items():
        path = args.out / file_name
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        drift.append(file_name)
        if not args.check:
            path.write_text(text, encoding="utf-8")
    stale = (
        sorted(p.name for p in args.out.glob("*.json") if p.name not in expected) if args.out.exists() else []
    )
    drift.extend(stale)
    if not args.check:
        for name in stale:
            (args.out / name).unlink()
    if args.check and drift:
        sys.stderr.write(f"schema drift in: {', '.join(drift)}; run python -m osbp.protocol.schemas\n")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
