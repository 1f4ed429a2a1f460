"""The AssistantProfiles table: each version of a tenant's or a project's assistant profile
(functions/assistant/assistant_profile.py), one item each, never changed once written.

`profile_key` is `tenant#<AccountSid>` or `tenant#<AccountSid>#project#<id>`; `version` is
the version number, zero-padded so that the newest sorts last. A batch asks with the
version in force when it was first asked (pinned on its user turn:
functions/states/generate_reply.py), so every retry asks the same way even if the profile
is edited meanwhile. The newest version is kept in memory for ASSISTANT_PROFILE_CACHE_SECONDS (read
for every batch); a pinned version forever (it never changes). The operator's CLI
(infra/assistants.py) names the table, as it has no settings."""

from __future__ import annotations

import time
from typing import Any

from botocore.exceptions import ClientError
from pydantic import BaseModel, ConfigDict

from functions.assistant.assistant_profile import AssistantProfile
from functions.assistant.settings import AssistantSettings
from functions.storage import dynamo, expressions
from functions.storage.settings import TableSettings

_newest: dict[str, tuple[float, ProfileVersion | None]] = {}
_pinned: dict[tuple[str, int], ProfileVersion] = {}
_CACHE_LIMIT = 10_000


class ProfileVersion(BaseModel):
    """One version of a profile."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    profile_key: str
    version: int
    profile: AssistantProfile
    written_at: str


class ProfileChangeRefused(Exception):
    """Another writer took the version number first, again and again."""


def profile_key(tenant_account_sid: str, project_id: str | None = None) -> str:
    key = f"tenant#{tenant_account_sid}"
    return f"{key}#project#{project_id}" if project_id else key


def _table(name: str | None) -> Any:
    return dynamo.table(name or TableSettings.get().assistant_profiles_table)


def _version(number: int) -> str:
    return f"{number:08d}"


def _read(item: dict[str, Any]) -> ProfileVersion:
    item = dynamo.from_dynamo(item)
    return ProfileVersion(
        profile_key=item["profile_key"],
        version=int(item["version"]),
        profile=AssistantProfile.model_validate(item["profile"]),
        written_at=item.get("written_at", ""),
    )


def put(key: str, profile: AssistantProfile, written_at: str, table: str | None = None) -> int:
    """Write `profile` as the next version of `key`; its version number."""
    for _ in range(5):
        newest = _query_newest(key, table)
        number = (newest.version if newest else 0) + 1
        item = {
            "profile_key": key,
            "version": _version(number),
            "profile": profile.model_dump(mode="json", exclude_none=True),
            "written_at": written_at,
        }
        try:
            _table(table).put_item(
                Item=dynamo.to_dynamo(item), ConditionExpression=expressions.NEW_PROFILE_VERSION
            )
        except ClientError as error:
            if dynamo.condition_failed(error):
                continue  # another writer took this number: the next one
            raise
        _newest.pop(key, None)
        return number
    raise ProfileChangeRefused(f"{key}: the version number was taken five times in a row")


def newest(key: str) -> ProfileVersion | None:
    """The version in force (cached, see above)."""
    now = time.monotonic()
    cached = _newest.get(key)
    if cached and cached[0] > now:
        return cached[1]
    found = _query_newest(key, None, consistent=False)
    if len(_newest) >= _CACHE_LIMIT:
        _newest.clear()
    _newest[key] = (now + AssistantSettings.get().assistant_profile_cache_seconds, found)
    return found


def get(key: str, version: int, table: str | None = None) -> ProfileVersion | None:
    """One version (cached: a version never changes)."""
    cached = _pinned.get((key, version))
    if cached is not None:
        return cached
    item = _table(table).get_item(Key={"profile_key": key, "version": _version(version)}).get("Item")
    if item is None:
        return None
    found = _read(item)
    if len(_pinned) >= _CACHE_LIMIT:
        _pinned.clear()
    _pinned[(key, version)] = found
    return found


def versions(key: str, table: str | None = None) -> list[ProfileVersion]:
    """Every version of `key`, oldest first."""
    items = dynamo.all_items(
        _table(table).query,
        KeyConditionExpression=expressions.PROFILE_VERSIONS,
        ExpressionAttributeValues={":key": key},
        ConsistentRead=True,
    )
    return [_read(item) for item in items]


def keys(table: str | None = None) -> dict[str, int]:
    """Every profile's key and its newest version number (a scan: the operator's list)."""
    items = dynamo.all_items(_table(table).scan, ProjectionExpression=expressions.PROFILE_KEYS)
    found: dict[str, int] = {}
    for item in items:
        found[item["profile_key"]] = max(found.get(item["profile_key"], 0), int(item["version"]))
    return dict(sorted(found.items()))


def forget() -> None:
    """Drop the cached versions in force (tests; a change made here drops its own)."""
    _newest.clear()


def _query_newest(key: str, table: str | None, consistent: bool = True) -> ProfileVersion | None:
    items = (
        _table(table)
        .query(
            KeyConditionExpression=expressions.PROFILE_VERSIONS,
            ExpressionAttributeValues={":key": key},
            ScanIndexForward=False,
            Limit=1,
            ConsistentRead=consistent,
        )
        .get("Items")
    )
    return _read(items[0]) if items else None
