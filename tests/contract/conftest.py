"""The contract tier: the in-memory fakes (tests/support/fakes.py) and the DynamoDB layer
(the table modules) against one set of tests. The DynamoDB layer runs on moto in this process
(mock_aws: no server, no stack), with the tables the stack deploys."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from functions.config import forget_settings
from functions.storage import dynamo
from functions.storage.models import Conversation, from_dynamo
from functions.storage.settings import TableSettings
from functions.storage.tables import ALL_TABLES
from functions.tenancy import id_key
from tests.support.fakes import ID_KEY, FakeTwilio, InMemoryStore, install


class Store:
    """Where a contract test puts what it starts from: a conversation (the table modules
    have no plain put for one; conversations.create draws its id)."""

    def __init__(self, fake: InMemoryStore | None) -> None:
        self.fake = fake

    def add_conversation(self, conversation: Conversation) -> None:
        if self.fake is not None:
            # A copy, as a table keeps: the fake's writes change the object it holds.
            self.fake.conversations[conversation.conversation_id] = conversation.model_copy(deep=True)
        else:
            table = dynamo.table(TableSettings.get().conversations_table)
            table.put_item(Item=dynamo.to_dynamo(conversation.to_item()))

    def conversation_attributes(self, conversation_id: str) -> dict[str, Any]:
        """The conversation's record as stored, with what the model does not read (the
        totals, the delivery failures, written by expressions only)."""
        if self.fake is not None:
            kept = self.fake.conversations[conversation_id].to_item()
            return {**kept, **self.fake.conversation_totals.get(conversation_id, {})}
        table = dynamo.table(TableSettings.get().conversations_table)
        return from_dynamo(
            table.get_item(Key={"conversation_id": conversation_id}, ConsistentRead=True)["Item"]
        )


@pytest.fixture(params=["in-memory", "dynamodb"])
def store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    if request.param == "in-memory":
        fake = InMemoryStore()
        install(monkeypatch, fake, FakeTwilio())
        yield Store(fake)
        return
    from moto import mock_aws

    from infra.local.tables import create_table_request

    _settings_for_moto(monkeypatch)
    monkeypatch.setattr(id_key, "conversation_id_key", lambda: ID_KEY)  # install gives the fakes theirs
    with mock_aws():
        # The table modules' resource, made inside the mock (a cached one may be a local stack's).
        resource = boto3.resource("dynamodb")
        monkeypatch.setattr(dynamo, "resource", lambda: resource)
        for table in ALL_TABLES:
            resource.meta.client.create_table(**create_table_request(table))
        yield Store(None)
    forget_settings()


def _settings_for_moto(monkeypatch: pytest.MonkeyPatch) -> None:
    names = {**{t.env_var: t.logical_id for t in ALL_TABLES}, "EVENT_BUS_NAME": "burst-reply"}
    credentials = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    for name, value in {**credentials, "AWS_DEFAULT_REGION": "us-east-1", **names}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)  # a local stack's, in this process
    forget_settings()
