"""Who may post a message: the webhook's first step, before the form is parsed into a
message or anything is stored.

A request is admitted only when its AccountSid is well formed and a registered tenant,
`To` is one of that tenant's numbers, and the signature is valid with that tenant's
credentials. The checks run cheapest first, so that a stranger costs nothing: the shape of
the AccountSid costs no call, the tenant is one GetItem cached in memory (an unknown one
too), the number is in the tenant's item, and only then is the tenant's token read from
Secrets Manager (cached by Powertools; read again past the cache when the tenant's item,
cached for TENANT_CACHE_SECONDS, names another token version than the cached secret:
`infra.tenants` writes one with each new token or signing key. Never because a signature
failed: a forger who knows an AccountSid and a number cannot make us read the secret, nor
spend a bounded refetch that a real rotation then waits for)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from twilio.request_validator import RequestValidator, get_signature_algorithm

from functions.intake.inbound import ACCOUNT_SID
from functions.intake.signed_url import signed_urls
from functions.storage.models import Tenant
from functions.tenancy import secrets, tenants
from functions.tenancy.secrets import TwilioCredentials


class Refusal(StrEnum):
    NO_SIGNATURE = "no_signature"
    MALFORMED_ACCOUNT = "malformed_account"
    UNKNOWN_ACCOUNT = "unknown_account"
    NOT_ITS_NUMBER = "not_its_number"  # `To` is not one of the signing account's numbers
    NO_CREDENTIALS = "no_credentials"  # a registered tenant without its token (operator's error)
    BAD_SIGNATURE = "bad_signature"


@dataclass(frozen=True)
class Signature:
    """The request's X-Twilio-Signature, and X-Twilio-Webhooks-Signature-Settings when
    Twilio signed with a shared key (`key=<SharedKey SID>,algorithm=HMAC_SHA256`)."""

    value: str | None
    settings: str | None = None


def admit(form: dict[str, str], url: str, signature: Signature, our_number: str = "To") -> Tenant | Refusal:
    """The tenant the request comes from, or why it is refused. `our_number` names the
    field that holds the tenant's number: `To` for an inbound message, `From` for the
    status callback of a message we sent."""
    account_sid = form.get("AccountSid", "")
    if not signature.value:
        return Refusal.NO_SIGNATURE
    if not ACCOUNT_SID.fullmatch(account_sid):
        return Refusal.MALFORMED_ACCOUNT
    tenant = tenants.find(account_sid)
    if tenant is None:
        return Refusal.UNKNOWN_ACCOUNT
    if form.get(our_number, "").strip() not in tenant.numbers:
        return Refusal.NOT_ITS_NUMBER
    credentials = secrets.tenant_twilio_credentials(account_sid, tenant.token_version)
    if credentials is None:
        return Refusal.NO_CREDENTIALS
    if not signature_is_valid(credentials, form, url, signature):
        return Refusal.BAD_SIGNATURE
    return tenant


def signature_is_valid(
    credentials: TwilioCredentials, form: dict[str, str], url: str, signature: Signature
) -> bool:
    """Twilio's signature of `url` and `form`: HMAC-SHA1 with the account's auth token,
    or, when the request names a shared key, with that key's secret and the algorithm it
    names (HMAC-SHA256), as the twilio SDK's RequestValidator computes them, over `url`
    with or without our connection overrides (`signed_urls`). A shared key the tenant has
    not registered, or an algorithm the SDK does not know, is refused."""
    if not signature.value:
        return False
    if not signature.settings:
        validator, algorithm = RequestValidator(credentials.auth_token), None
    else:
        key = credentials.signing_keys.get(_shared_key_sid(signature.settings))
        if key is None:
            return False
        validator = RequestValidator(key)
        algorithm = get_signature_algorithm(signature.settings)
    return any(validator.validate(signed, form, signature.value, algorithm) for signed in signed_urls(url))


def _shared_key_sid(settings: str) -> str:
    for part in settings.split(","):
        name, _, value = part.partition("=")
        if name.strip() == "key":
            return value.strip()
    return ""
