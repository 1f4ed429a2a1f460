"""End to end over HTTP: a tenant's documents uploaded with `python -m infra.assistants
knowledge add` and searched by the model (OpenAI's file_search, done by the stand-in by
word match); a tenant can name only its own vector stores."""

from __future__ import annotations

import pytest
import requests

from tests.support.shop import Shop

pytestmark = pytest.mark.e2e

HOURS = "Our shop is in Main Street.\n\nSunday opening hours are 10:00 to 16:00.\n\nReturns within 30 days.\n"


def test_the_tenants_documents_answer_the_person_and_only_its_own_stores_are_named(harness, tmp_path):
    shop, other = Shop(harness), Shop(harness)
    document = tmp_path / "hours.md"
    document.write_text(HOURS)

    added = shop.assistants("knowledge", "add", "--tenant", shop.account_sid, str(document))
    assert added.returncode == 0, added.stderr
    user = harness.new_user()
    shop.send(user, "Hi! When are your Sunday opening hours?")
    conversation_id = shop.conversation_id(user)
    harness.wait_until_quiet(conversation_id, runs=1)

    [reply] = harness.replies_to(user)
    assert "Knowledge said: Sunday opening hours are 10:00 to 16:00." in reply
    control = f"{(harness.stack.openai_url or '').removesuffix('/v1')}/_control/vector_stores"
    stores = [
        s
        for s in requests.get(control, timeout=5).json()["vector_stores"]
        if s["metadata"].get("tenant") == shop.account_sid
    ]
    assert len(stores) == 1 and [f["filename"] for f in stores[0]["files"]] == ["hours.md"]
    asked = [c for c in harness.stack.openai.calls if c.get("vector_store_ids")]
    assert {tuple(c["vector_store_ids"]) for c in asked} == {(stores[0]["id"],)}

    refused = other.put_profile(tmp_path, {"knowledge": {"vector_store_ids": [stores[0]["id"]]}})
    assert refused.returncode == 1 and "is not a store of tenant" in refused.stderr
    shown = shop.assistants("show", "--tenant", shop.account_sid)
    assert stores[0]["id"] in shown.stdout
