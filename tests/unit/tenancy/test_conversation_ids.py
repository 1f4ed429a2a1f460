"""A conversation's id is an HMAC under the deployment's key: it cannot be computed from
the addresses without the key, and one key always gives one id, so two webhooks racing to
create a conversation agree on its record."""

from __future__ import annotations

import hashlib

import pytest

from functions.intake.inbound import Channel, address_key
from functions.tenancy import conversations, id_key

TENANT = "AC" + "1" * 32
USER, OURS = "whatsapp:+15551234567", "whatsapp:+14155238886"
ADDRESSES = address_key(Channel.WHATSAPP, USER, OURS)


def _id_under(monkeypatch: pytest.MonkeyPatch, key: bytes) -> str:
    monkeypatch.setattr(id_key, "conversation_id_key", lambda: key)
    return conversations.new_conversation_id(TENANT, ADDRESSES)


def test_an_id_is_not_the_plain_hash_anyone_can_compute_from_the_addresses(monkeypatch):
    plain = "c" + hashlib.sha256(f"{TENANT}#{ADDRESSES}".encode()).hexdigest()[:24]

    keyed = _id_under(monkeypatch, b"k" * 64)

    assert keyed != plain
    assert len(keyed) == len(plain) == 25 and keyed.startswith("c")  # the shape ids had
    assert "5551234567" not in keyed


def test_two_keys_give_two_ids_and_one_key_always_the_same(monkeypatch):
    first = _id_under(monkeypatch, b"k" * 64)

    assert _id_under(monkeypatch, b"l" * 64) != first
    assert _id_under(monkeypatch, b"k" * 64) == first  # racing webhooks draw the same id
    other_tenant = conversations.new_conversation_id("AC" + "2" * 32, ADDRESSES)
    assert other_tenant != first


def test_a_short_key_is_refused_and_never_shown(monkeypatch):
    monkeypatch.setattr(id_key.parameters, "get_secret", lambda name, max_age: "s3cret")

    with pytest.raises(ValueError, match="32 characters") as refused:
        id_key.conversation_id_key()

    assert "s3cret" not in str(refused.value)


def test_the_key_is_read_for_the_instances_life(monkeypatch):
    asked: list[int] = []

    def get_secret(name: str, max_age: int) -> str:
        asked.append(max_age)
        return "k" * 64

    monkeypatch.setattr(id_key.parameters, "get_secret", get_secret)

    assert id_key.conversation_id_key() == b"k" * 64
    assert asked == [365 * 24 * 3600]  # Powertools keeps it: one read per instance
