"""The public base URL Twilio calls and the connection overrides its URLs carry: one
reading of the configuration, used by the functions, the CDK stack and the local stack.

The overrides are the fragment of every URL given to Twilio (`#rc=5&rp=all`: without them
Twilio retries only a connection failure, never a 5xx;
https://www.twilio.com/docs/usage/webhooks/webhooks-connection-overrides). A fragment on
the configured base URL takes precedence over the overrides setting."""

from __future__ import annotations

from typing import NamedTuple


class PublicBase(NamedTuple):
    url: str  # without its fragment or a trailing slash; empty: not configured
    overrides: str  # the connection overrides, without `#`; empty: none

    def given_to_twilio(self, path: str) -> str:
        """The URL of `path` under the base, as Twilio is given it (with the overrides)."""
        return with_overrides(f"{self.url}{path}", self.overrides)


def public_base(configured_url: str, overrides_setting: str) -> PublicBase:
    """The configured base URL (WEBHOOK_BASE_URL, or the stack's `webhook_base_url`) and
    the overrides: the URL's own fragment, or else the setting (TWILIO_CONNECTION_OVERRIDES)."""
    url, hashed, fragment = configured_url.partition("#")
    return PublicBase(url.rstrip("/"), fragment if hashed else overrides_setting.lstrip("#"))


def with_overrides(url: str, overrides: str) -> str:
    """`url` with the connection overrides as its fragment (none: `url` as it is)."""
    return f"{url}#{overrides}" if overrides else url
