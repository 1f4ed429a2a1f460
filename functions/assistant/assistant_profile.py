"""A tenant's assistant, defined here: its model, instructions and function tools.

OpenAI's Assistants API was shut down on 2026-08-26 and its Prompt objects (`/v1/prompts`)
on 2026-11-30; OpenAI's migration guide says to keep the prompt in your own code. So a
tenant's (or a project's) assistant is a profile kept in the AssistantProfiles table,
versioned (functions/assistant/assistant_profiles.py), written with `python -m infra.assistants`.

A function tool is served by the business: the model asks for a call, the service makes it
(functions/states/call_tools.py), a POST to the tool's `url`, and gives the model the
answer. Its `parameters` are sent to OpenAI in strict mode, whose rules are checked here
when the profile is written: every object lists all its properties in `required` and sets
`additionalProperties: false`
(https://platform.openai.com/docs/guides/function-calling#strict-mode).
A model's answer never decides where a call goes: only the profile's `url` does."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# OpenAI's function names: letters, digits, underscores and dashes, at most 64.
TOOL_NAME = r"^[a-zA-Z0-9_-]{1,64}$"
MAX_TOOLS = 32  # a profile's function tools (OpenAI takes up to 128: each one costs input tokens)
MAX_TOOL_ROUNDS = 10  # what a profile may ask for at most (MAX_TOOL_ROUNDS, the setting, is the default)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class FunctionTool(Strict):
    """A function the model may ask for, served by the business at `url`.
    `side_effects`: the call changes something (an order cancelled, a booking made), so a
    call whose outcome is in doubt (timed out, connection lost) is never made again.
    `confirm`: the call runs only once the person said yes in the batch after the one in
    which the model proposed it (functions/states/call_tools.py)."""

    type: Literal["function"] = "function"
    name: Annotated[str, Field(pattern=TOOL_NAME)]
    description: Annotated[str, Field(min_length=1, max_length=1024)]
    parameters: dict[str, Any]
    url: Annotated[str, Field(min_length=1, max_length=2048)]
    side_effects: bool = False
    confirm: bool = False

    @field_validator("parameters")
    @classmethod
    def _strict_schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        if schema.get("type") != "object":
            raise ValueError('must be a JSON Schema of "type": "object"')
        strict_schema_problems(schema, "parameters")
        return schema

    @field_validator("url")
    @classmethod
    def _web_url(cls, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise ValueError("must be an https:// URL")
        if parts.username or parts.password:
            raise ValueError("must not carry credentials (the service signs each call instead)")
        if parts.scheme == "http" and not is_loopback_host(parts.hostname):
            raise ValueError("must be https:// (http:// only for a loopback address, on the local stack)")
        return url

    def for_openai(self) -> dict[str, Any]:
        """The tool as the Responses API takes it (strict: the arguments match the schema)."""
        return {
            "type": "function",
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "strict": True,
        }


class Knowledge(Strict):
    """The tenant's documents, searched by the model with OpenAI's `file_search` over its
    vector stores (https://platform.openai.com/docs/guides/tools-file-search): only stores
    made for the tenant (`python -m infra.assistants knowledge add`) may be named, checked
    when the profile is written and when a batch is asked. `max_num_results` bounds the
    passages one search returns, `max_tool_calls` the searches one response makes (each is
    billed)."""

    vector_store_ids: Annotated[
        list[Annotated[str, Field(pattern=r"^vs_[A-Za-z0-9_-]{1,64}$")]], Field(min_length=1, max_length=2)
    ]
    max_num_results: Annotated[int, Field(ge=1, le=20)] = 5
    max_tool_calls: Annotated[int, Field(ge=1, le=5)] = 2

    def for_openai(self) -> dict[str, Any]:
        return {
            "type": "file_search",
            "vector_store_ids": list(self.vector_store_ids),
            "max_num_results": self.max_num_results,
        }


class AssistantProfile(Strict):
    """What a tenant's (or a project's) assistant is asked with. Unset fields fall back to
    the deployment's settings (OPENAI_MODEL, OPENAI_INSTRUCTIONS, MAX_TOOL_ROUNDS,
    TOOL_TIMEOUT_SECONDS); a conversation's own `ai_model`/`ai_instructions` win over both."""

    model: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    instructions: Annotated[str, Field(min_length=1, max_length=32_000)] | None = None
    tools: Annotated[list[FunctionTool], Field(max_length=MAX_TOOLS)] = []
    knowledge: Knowledge | None = None
    max_tool_rounds: Annotated[int, Field(ge=1, le=MAX_TOOL_ROUNDS)] | None = None
    tool_timeout_seconds: Annotated[float, Field(ge=1, le=25)] | None = None

    @model_validator(mode="after")
    def _names_once(self) -> AssistantProfile:
        names = [tool.name for tool in self.tools]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"tools: each name once ({', '.join(twice)} more than once)")
        return self

    def tool(self, name: str) -> FunctionTool | None:
        return next((tool for tool in self.tools if tool.name == name), None)

    def stores_not_among(self, owned: list[str]) -> list[str]:
        """The vector stores the profile names that are not among `owned` (the tenant's)."""
        named = self.knowledge.vector_store_ids if self.knowledge else []
        return [store for store in named if store not in owned]


def strict_schema_problems(schema: Any, where: str) -> None:
    """Raise ValueError naming the first place where `schema` breaks OpenAI's strict mode."""
    if not isinstance(schema, dict):
        return
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        if schema.get("additionalProperties") is not False:
            raise ValueError(f'{where}: strict mode needs "additionalProperties": false')
        missing = sorted(set(properties) - set(schema.get("required", [])))
        if missing:
            raise ValueError(
                f"{where}: strict mode needs every property in required ({', '.join(missing)} not)"
            )
        for name, sub in properties.items():
            strict_schema_problems(sub, f"{where}.properties.{name}")
    if isinstance(schema.get("items"), dict):
        strict_schema_problems(schema["items"], f"{where}.items")
    for keyword in ("anyOf", "$defs", "definitions"):
        found = schema.get(keyword)
        subs = found.items() if isinstance(found, dict) else enumerate(found or [])
        for key, sub in subs:
            strict_schema_problems(sub, f"{where}.{keyword}.{key}")


def is_loopback_host(host: str) -> bool:
    """localhost, or a loopback address (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
