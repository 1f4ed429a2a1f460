"""The Projects table: projects group conversations and carry their batching rules."""

from __future__ import annotations

import time
from typing import Any

from functions.storage import dynamo
from functions.storage.settings import TableSettings

_cache: dict[str, tuple[float, dict[str, Any] | None]] = {}
_CACHE_SECONDS = 60


def _table() -> Any:
    return dynamo.table(TableSettings.get().projects_table)


def own_rules(project_id: str) -> dict[str, Any] | None:
    """A project's own batching rules, as its item holds them (partial: they override the
    global defaults; cached for a minute: read on every message)."""
    cached = _cache.get(project_id)
    if cached and cached[0] > time.monotonic():
        return cached[1]
    item = _table().get_item(Key={"project_id": project_id}).get("Item") or {}
    batching = dynamo.from_dynamo(item.get("batching")) if item.get("batching") else None
    _cache[project_id] = (time.monotonic() + _CACHE_SECONDS, batching)
    return batching


def put(project_id: str, batching: dict[str, Any]) -> None:
    _table().put_item(Item=dynamo.to_dynamo({"project_id": project_id, "batching": batching}))
    _cache.pop(project_id, None)
