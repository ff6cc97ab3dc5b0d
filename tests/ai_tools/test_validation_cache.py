"""The compiled validator is made once per schema and follows the schema it was made from."""

from ai_tools import registry
from ai_tools.tools.schema import ID, obj


def test_a_tool_given_another_schema_is_validated_against_the_new_one(monkeypatch):
    tool = registry.write_tool("modify_creature")
    valid = {"creature_id": 1, "hp_delta": -1}
    assert tool.validate(valid) is None  # the validator of the tool's own schema, now cached

    monkeypatch.setattr(type(tool), "schema", obj({"creature_id": ID}, ("creature_id",)))
    assert (
        tool.validate(valid)
        == "input: Additional properties are not allowed ('hp_delta' was unexpected)"
    )

    monkeypatch.undo()
    assert tool.validate(valid) is None


def test_an_invalid_input_still_names_the_best_error():
    tool = registry.write_tool("modify_creature")
    assert tool.validate({"creature_id": "one", "hp_delta": -1}) == (
        "input['creature_id']: 'one' is not of type 'integer'"
    )
