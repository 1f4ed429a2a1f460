"""Webhooks delivered to the local stack as Twilio delivers them: to the URL Twilio is
given (with the connection overrides as its fragment), signed, retried as the overrides say."""

from __future__ import annotations

from functions.intake.settings import PublicUrlSettings
from functions.public_url import with_overrides
from infra.local.connection_overrides import Delivery, post_as_twilio
from infra.local.webhooks import sign


def given_to_twilio(url: str) -> str:
    """`url` as Twilio is given it: with the connection overrides as its fragment, so that
    Twilio retries a 5xx (TWILIO_CONNECTION_OVERRIDES)."""
    return with_overrides(url, PublicUrlSettings.get().public_base().overrides)


def deliver_as_twilio(
    url: str, form: dict[str, str], auth_token: str, include_fragment: bool = True
) -> Delivery:
    """POST `form` to `url` as Twilio calls a webhook: signed with `auth_token` (over the
    URL with or without its fragment), retried only as the URL's connection overrides say
    (infra/local/connection_overrides.py)."""
    return post_as_twilio(
        url,
        form,
        lambda signed, params: sign(signed, params, auth_token),
        include_fragment,
        {"Content-Type": "application/x-www-form-urlencoded"},
    )
