"""Tool schemas in OpenAI's strict mode and the Responses API's flat shape: every property
required, optional ones nullable, no additional properties, only the keywords strict mode
takes — and each tool's examples, sent as a strict caller sends them, validate against the
strict schema (checked by a maintained validator) and run through the registry."""

from __future__ import annotations

import fastjsonschema
import pytest

from locimem import ObjectMemory
from locimem.agent.tools import SPECS, STRICT_KEYWORDS, ToolRegistry
from locimem.errors import InvalidInput
from tests.agent.test_agent_tools import build_home


def _keywords(schema: dict) -> set[str]:
    out = set(schema)
    for sub in (schema.get("properties") or {}).values():
        out |= _keywords(sub)
    if "items" in schema:
        out |= _keywords(schema["items"])
    return out


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_strict_schemas_hold_strict_modes_rules_and_validate_their_examples(spec) -> None:
    chat = spec.schema("openai", strict=True)
    assert chat["type"] == "function" and chat["function"]["strict"] is True
    flat = spec.schema("responses", strict=True)
    assert {k: flat[k] for k in ("type", "name", "strict")} == {
        "type": "function", "name": spec.name, "strict": True}
    params = flat["parameters"]
    assert params == chat["function"]["parameters"]
    assert params["additionalProperties"] is False
    assert params["required"] == list(params["properties"]) == list(
        spec.parameters["properties"])
    assert _keywords(params) <= STRICT_KEYWORDS
    for name, prop in params["properties"].items():
        optional = name not in spec.parameters.get("required", [])
        assert ("null" in prop["type"]) is optional, name
        if "enum" in prop:
            assert (None in prop["enum"]) is optional, name
    check = fastjsonschema.compile(params)
    for example in spec.strict_examples():
        assert set(example) == set(params["properties"])
        check(example)  # raises if the example does not validate


def test_strict_examples_run_through_the_registry() -> None:
    with ObjectMemory.open(":memory:", scope="home") as mem:
        build_home(mem)
        tools = ToolRegistry(mem)
        for spec in tools:
            for strict, plain in zip(spec.strict_examples(), spec.examples, strict=True):
                assert tools.call_json(spec.name, strict) == tools.call_json(spec.name, plain)


def test_the_plain_shapes_are_unchanged_and_strict_is_openais() -> None:
    spec = SPECS[0]
    assert spec.schema("responses") == {"type": "function", "name": spec.name,
                                        "description": spec.description,
                                        "parameters": spec.parameters, "strict": False}
    assert "strict" not in spec.schema("openai")["function"]
    with pytest.raises(InvalidInput, match="strict schemas are OpenAI's"):
        spec.schema("anthropic", strict=True)
    with ObjectMemory.open(":memory:") as mem:
        assert len(mem.tools().schemas("responses", strict=True)) == 14
