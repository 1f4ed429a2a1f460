"""No DynamoDB item is written on behalf of every conversation (invariant 11): an item that
every conversation writes serializes a deployment (one item takes at most 1,000 writes a
second, and transactions on it cancel each other long before that). Measured over HTTP:
40 conversations of one tenant typing at once, each item a function wrote (as the local
stack records them, with their keys: infra/local/aws_calls.py) counted by the
conversations it was written for. A shared counter spread over 16 shards is written for
about 40/16 of them (more than 10 on one shard: about 4 runs in 10,000)."""

from __future__ import annotations

import secrets
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from infra.local.aws_calls import RECORDER
from infra.local.webhooks import inbound_form, post_webhook

pytestmark = pytest.mark.e2e

CONVERSATIONS = 40
MOST_WRITERS = CONVERSATIONS // 4


@pytest.fixture
def tenant(harness):
    number = f"whatsapp:+1555005{secrets.randbelow(10**4):04d}"
    account_sid, token = harness.add_tenant(number)
    yield account_sid, token, number
    harness.stack.tenants.remove(account_sid)
    harness.forget_tenants()


def test_no_item_is_written_for_more_than_a_quarter_of_40_conversations_typing_at_once(harness, tenant):
    account_sid, token, number = tenant
    users = [harness.new_user() for _ in range(CONVERSATIONS)]

    def burst(user: str) -> None:
        for fragment in ("hi", "where is my order?"):
            form = inbound_form(fragment, user, number, account_sid)
            assert post_webhook(harness.stack.whatsapp_url, form, token).status_code == 200

    with ThreadPoolExecutor(max_workers=10) as pool:
        list(pool.map(burst, users))
    conversation_of = {u: harness.conversation_of(u, number, account_sid).conversation_id for u in users}
    for conversation_id in conversation_of.values():
        harness.wait_until_quiet(conversation_id, runs=1)
    assert all(harness.replies_to(u) for u in users)  # every conversation was answered

    ours = {("person", u): c for u, c in conversation_of.items()}
    ours.update({("conversation", c): c for c in conversation_of.values()})
    writers = Counter(
        {
            item: len({ours[whom] for whom in whom_set if whom in ours})
            for item, whom_set in RECORDER.writers().items()
        }
    )
    # A sender's pace item (functions/delivery/sender_budget.py) is written once per reply part
    # that sender sends, by every conversation of its number: its writes a second are the
    # sender's own rate, at most 100 a shard (Twilio sends at most 400 a second from one
    # sender, so 4 shards), far below DynamoDB's 1,000 a second per item.
    paced = {item: n for item, n in writers.items() if item[1].startswith("pace#")}
    assert all(n <= CONVERSATIONS for n in paced.values())
    most = Counter({item: n for item, n in writers.items() if item not in paced}).most_common(5)
    assert most[0][1] <= MOST_WRITERS, f"items written for the most of the {CONVERSATIONS}: {most}"
