"""Where the replay's arrival times come from: a CSV file, or the Turns table (each user
turn keeps its fragments' arrival times: `first_received_at` and `arrival_offsets_ms`)."""

from __future__ import annotations

import csv
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from infra.replay.simulate import Fragment


class SourceError(ValueError):
    """Input the replay cannot read, said with where it is."""


def epoch_ms(text: str) -> int:
    """Epoch seconds (`1764150000.25`) or ISO-8601 (`2026-11-26T09:00:00Z`; no zone: UTC)."""
    text = text.strip()
    try:
        return int(round(float(text) * 1000))
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as error:
        raise ValueError(f"{text!r} is neither epoch seconds nor ISO-8601") from error
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(round(moment.timestamp() * 1000))


def from_csv(path: Path) -> tuple[list[Fragment], bool]:
    """The file's fragments, and whether its rows carry burst labels (all of them do, or
    none). Columns `conversation,received_at[,burst]`, a header row first."""
    try:
        handle = path.open(newline="", encoding="utf-8-sig")
    except OSError as error:
        raise SourceError(f"{path}: {error.strerror}") from error
    with handle:
        reader = csv.DictReader(handle)
        columns = {c.strip() for c in reader.fieldnames or []}
        missing = {"conversation", "received_at"} - columns
        if missing:
            raise SourceError(
                f"{path}: no column {', '.join(sorted(missing))} (columns: conversation,received_at[,burst])"
            )
        fragments, labels = [], set()
        for line, row in enumerate(reader, start=2):
            row = {k.strip(): (v or "").strip() for k, v in row.items() if k}
            if not row["conversation"]:
                raise SourceError(f"{path}:{line}: empty conversation")
            try:
                at_ms = epoch_ms(row["received_at"])
            except ValueError as error:
                raise SourceError(f"{path}:{line}: received_at {error}") from error
            burst = row.get("burst", "")
            labels.add(bool(burst))
            fragments.append(Fragment(row["conversation"], at_ms, burst))
    if labels == {True, False}:
        raise SourceError(f"{path}: some rows have a burst label and some do not (label all or none)")
    if not fragments:
        raise SourceError(f"{path}: no rows")
    return fragments, labels == {True}


_SINCE = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")


def since_ms(text: str, now_ms: int) -> int:
    """`7d`, `12h`, `30m`, `90s` before `now_ms`."""
    match = _SINCE.match(text.strip())
    if not match:
        raise SourceError(f"--since {text!r}: a number and s, m, h or d (e.g. 7d)")
    seconds = float(match[1]) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[match[2]]
    return now_ms - int(seconds * 1000)


def turn_fragments(item: dict[str, Any]) -> list[Fragment]:
    """A user turn's fragments (a turn recorded before it kept its offsets gives its first
    and last only)."""
    first = item.get("first_received_at")
    if item.get("role") != "user" or not first:
        return []
    start = epoch_ms(first)
    offsets = [int(o) for o in item.get("arrival_offsets_ms") or []]
    if not offsets:
        last = item.get("last_received_at")
        offsets = [0, epoch_ms(last) - start] if last and last != first else [0]
    conversation = str(item["conversation_id"])
    return [Fragment(conversation, start + offset, "") for offset in offsets]


def from_turns(table: Any, since: int) -> list[Fragment]:
    """Every fragment of the user turns whose first fragment came at `since` or later
    (a Scan of the Turns table, a boto3 Table resource)."""
    from boto3.dynamodb.conditions import Attr

    fragments: list[Fragment] = []
    kwargs: dict[str, Any] = {"FilterExpression": Attr("role").eq("user")}
    while True:
        page = table.scan(**kwargs)
        for item in page["Items"]:
            fragments.extend(f for f in turn_fragments(item) if f.at_ms >= since)
        if "LastEvaluatedKey" not in page:
            return fragments
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
