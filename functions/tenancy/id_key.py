"""The deployment's key for conversation ids: a random string the stack generates in
Secrets Manager (CONVERSATION_ID_KEY_SECRET_NAME). A new conversation's id is an HMAC of
its tenant and addresses under this key (functions/tenancy/conversations.py), so that an id,
which execution names, events, logs and console URLs carry, gives away no phone number.
Never logged. Read once per Lambda instance, and only by a function creating a
conversation."""

from __future__ import annotations

from aws_lambda_powertools.utilities import parameters

from functions.tenancy.settings import ConversationIdSettings

# Kept for the instance's whole life: the key is not rotated, and two webhooks racing to
# create one conversation must draw the same id.
_KEPT_SECONDS = 365 * 24 * 3600
# The stack generates 64 characters; a shorter key could be guessed along with the number.
_MIN_CHARACTERS = 32


def conversation_id_key() -> bytes:
    name = ConversationIdSettings.get().conversation_id_key_secret_name
    key = str(parameters.get_secret(name, max_age=_KEPT_SECONDS) or "")
    if len(key) < _MIN_CHARACTERS:
        raise ValueError(f"secret {name} holds no key of {_MIN_CHARACTERS} characters or more")
    return key.encode()
