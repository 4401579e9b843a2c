"""Hypothesis strategies for the values a published OSBP JSON Schema accepts.

Covers exactly the keywords the tool input schemas use (``type``, ``properties``, ``required``,
``additionalProperties: false``, ``items``, ``enum``, ``const``, ``pattern``, ``minLength``, ``minimum``,
``maximum`` and local ``$ref``s into ``$defs``) and refuses any other validation keyword, so a schema that
grows a new rule fails here loudly instead of being generated around. (hypothesis-jsonschema, the general
tool, no longer runs on current Hypothesis 6 releases: its object strategy uses an internal API that
Hypothesis removed.)
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

__all__ = ["from_schema"]

#: Keywords that describe rather than constrain: ignored.
_ANNOTATIONS = frozenset({"$schema", "title", "description", "$defs"})
_HANDLED = frozenset(
    {"$ref", "type", "properties", "required", "additionalProperties", "items", "enum", "const"}
    | {"pattern", "minLength", "minimum", "maximum"}
)


def from_schema(
    schema: dict[str, Any], *, strings: st.SearchStrategy[str] | None = None
) -> st.SearchStrategy[Any]:
    """Values valid against ``schema`` (a whole published schema document, ``$defs`` included).

    ``strings`` replaces the default for free strings (no ``pattern``, ``enum`` or ``const``): a fuzz
    passes hostile values there; it is filtered to the schema's ``minLength``.
    """
    return _strategy(schema, schema.get("$defs", {}), strings)


def _strategy(
    node: dict[str, Any], defs: dict[str, Any], strings: st.SearchStrategy[str] | None = None
) -> st.SearchStrategy[Any]:
    unknown = set(node) - _ANNOTATIONS - _HANDLED
    if unknown:
        raise NotImplementedError(f"no strategy for schema keywords {sorted(unknown)}")
    if "$ref" in node:
        name = node["$ref"].removeprefix("#/$defs/")
        return _strategy(defs[name], defs, strings)
    if "const" in node:
        return st.just(node["const"])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    kind = node.get("type")
    if kind == "object":
        assert node.get("additionalProperties") is False, "OSBP objects are closed"
        members = node.get("properties", {}).items()
        properties = {key: _strategy(value, defs, strings) for key, value in members}
        required = set(node.get("required", []))
        return st.fixed_dictionaries(
            {key: value for key, value in properties.items() if key in required},
            optional={key: value for key, value in properties.items() if key not in required},
        )
    if kind == "array":
        return st.lists(_strategy(node["items"], defs, strings), max_size=3)
    if kind == "string":
        if "pattern" in node:
            return st.from_regex(node["pattern"], fullmatch=True)
        if strings is not None:
            shortest = node.get("minLength", 0)
            return strings.filter(lambda value: len(value) >= shortest)
        return st.text(min_size=node.get("minLength", 0), max_size=24)
    if kind == "integer":
        return st.integers(min_value=node.get("minimum"), max_value=node.get("maximum"))
    if kind == "boolean":
        return st.booleans()
    raise NotImplementedError(f"no strategy for schema type {kind!r}")
