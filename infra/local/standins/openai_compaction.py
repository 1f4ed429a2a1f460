"""Server-side compaction in the OpenAI stand-in, as OpenAI documents it
(https://developers.openai.com/api/docs/guides/context-management): a request with
`context_management: [{"type": "compaction", "compact_threshold": N}]` whose rendered input
passes N tokens is compacted: its output holds a `compaction` item before the reply, which
"carries forward key prior state" in fewer tokens, and the next request on the conversation
renders from that item on. The stand-in's summary keeps the most recent items' text, up to
a quarter of the threshold (in words, its tokens)."""

from __future__ import annotations

import base64
from typing import Any

from infra.local.standins.openai_model import item_text, new_id, words


def compaction_threshold(response: dict[str, Any]) -> int | None:
    for entry in response.get("context_management") or []:
        if entry.get("type") == "compaction" and entry.get("compact_threshold") is not None:
            return int(entry["compact_threshold"])
    return None


def rendered(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a request renders of a conversation's items: from its latest compaction item on."""
    last = max((i for i, item in enumerate(items) if item.get("type") == "compaction"), default=0)
    return items[last:]


def compaction_item(seen: list[dict[str, Any]], threshold: int) -> dict[str, Any]:
    """The item that stands in for `seen`: the most recent text that fits a quarter of the
    threshold, opaque (as OpenAI's `encrypted_content` is)."""
    kept: list[str] = []
    budget = max(1, threshold // 4)
    for item in reversed(seen):
        text = item_text(item)
        if kept and words(text) + sum(words(k) for k in kept) > budget:
            break
        kept.insert(0, " ".join(text.split()[-budget:]))
    summary = "\n".join(kept)
    return {
        "type": "compaction",
        "id": new_id("cmp"),
        "encrypted_content": base64.b64encode(summary.encode()).decode(),
    }
