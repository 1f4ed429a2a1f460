"""An assistant profile file: refused with a message naming the field, before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from functions.assistant.assistant_profile import AssistantProfile
from infra.assistants import ProfileRefused, read_profile

ORDER_SCHEMA = {
    "type": "object",
    "properties": {"order": {"type": "string"}},
    "required": ["order"],
    "additionalProperties": False,
}


def _tool(**changes: object) -> dict[str, object]:
    tool: dict[str, object] = {
        "type": "function",
        "name": "lookup_order",
        "description": "Where an order is",
        "parameters": ORDER_SCHEMA,
        "url": "https://shop.example.com/tools/order",
    }
    return {**tool, **changes}


def _refusal(tmp_path: Path, profile: object) -> str:
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(profile))
    with pytest.raises(ProfileRefused) as refused:
        read_profile(path)
    return str(refused.value)


def test_a_good_profile_is_read_and_its_tools_go_to_openai_strict(tmp_path):
    path = tmp_path / "profile.json"
    path.write_text(json.dumps({"instructions": "You are Example Shop's assistant.", "tools": [_tool()]}))

    profile = read_profile(path)

    assert profile.tools[0].for_openai() == {
        "type": "function",
        "name": "lookup_order",
        "description": "Where an order is",
        "parameters": ORDER_SCHEMA,
        "strict": True,
    }
    assert "url" not in profile.tools[0].for_openai()  # where a call goes is ours to know


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"url": "http://shop.example.com/tools"}, "tools.0.url"),
        ({"url": "ftp://shop.example.com/tools"}, "tools.0.url"),
        ({"url": "https://user:secret@shop.example.com/"}, "tools.0.url"),
        ({"name": "look up order"}, "tools.0.name"),
        (
            {"parameters": {"type": "object", "properties": {"order": {"type": "string"}}}},
            "additionalProperties",
        ),
        (
            {"parameters": {**ORDER_SCHEMA, "required": []}},
            "every property in required (order not)",
        ),
        ({"unexpected": 1}, "tools.0.unexpected"),
    ],
)
def test_a_tool_amiss_is_refused_naming_the_field(tmp_path, change, named):
    assert named in _refusal(tmp_path, {"tools": [_tool(**change)]})


def test_a_nested_object_must_be_strict_too(tmp_path):
    parameters = {
        "type": "object",
        "properties": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}},
        "required": ["address"],
        "additionalProperties": False,
    }
    assert "parameters.properties.address" in _refusal(tmp_path, {"tools": [_tool(parameters=parameters)]})


def test_two_tools_of_one_name_and_limits_out_of_bounds_are_refused(tmp_path):
    assert "lookup_order more than once" in _refusal(tmp_path, {"tools": [_tool(), _tool()]})
    assert "max_tool_rounds" in _refusal(tmp_path, {"max_tool_rounds": 11})
    assert "tool_timeout_seconds" in _refusal(tmp_path, {"tool_timeout_seconds": 60})


def test_a_file_that_is_not_json_is_refused(tmp_path):
    path = tmp_path / "profile.json"
    path.write_text("{not json")
    with pytest.raises(ProfileRefused, match="not a JSON file"):
        read_profile(path)


def test_http_is_allowed_to_a_loopback_address_only():
    tool = AssistantProfile.model_validate({"tools": [_tool(url="http://127.0.0.1:8080/tool")]}).tools[0]
    assert tool.url.startswith("http://127.0.0.1")


def test_knowledge_names_vector_stores_and_bounds_its_searches(tmp_path):
    assert "knowledge.vector_store_ids.0" in _refusal(
        tmp_path, {"knowledge": {"vector_store_ids": ["store-1"]}}
    )
    assert "knowledge.vector_store_ids" in _refusal(tmp_path, {"knowledge": {"vector_store_ids": []}})
    many = {"vector_store_ids": ["vs_1"], "max_num_results": 21}
    assert "knowledge.max_num_results" in _refusal(tmp_path, {"knowledge": many})
    profile = AssistantProfile.model_validate({"knowledge": {"vector_store_ids": ["vs_abc"]}})
    assert profile.knowledge is not None
    assert profile.knowledge.for_openai() == {
        "type": "file_search",
        "vector_store_ids": ["vs_abc"],
        "max_num_results": 5,
    }


def test_a_profile_naming_a_store_that_is_not_the_tenants_is_refused_before_it_is_written(monkeypatch):
    from functions.assistant import assistant_profiles
    from functions.storage.models import Tenant
    from functions.tenancy import tenants
    from infra.assistants import AssistantAdmin

    sid = "AC" + "a" * 32
    written: list[object] = []
    monkeypatch.setattr(
        tenants, "get", lambda account, table=None: Tenant(account_sid=sid, vector_store_ids=["vs_own"])
    )
    monkeypatch.setattr(assistant_profiles, "put", lambda *args: written.append(args) or 1)
    admin = AssistantAdmin(
        {"ASSISTANT_PROFILES_TABLE": "p", "TENANTS_TABLE": "t", "TOOL_TENANT_SECRET_PREFIX": "x/"},
        secretsmanager=object(),
    )

    with pytest.raises(ValueError, match="vs_other is not a store of tenant"):
        admin.put(
            sid, None, AssistantProfile.model_validate({"knowledge": {"vector_store_ids": ["vs_other"]}})
        )
    assert written == []
    assert (
        admin.put(sid, None, AssistantProfile.model_validate({"knowledge": {"vector_store_ids": ["vs_own"]}}))
        == 1
    )
