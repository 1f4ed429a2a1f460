"""Who may post a message: the tenant, its numbers and its signature, checked with the
twilio SDK's RequestValidator (HMAC-SHA1 with the auth token, or HMAC-SHA256 with a shared
key). The tenant lookup and the credentials are replaced by tables here; the end-to-end
tests use DynamoDB and Secrets Manager on the emulator."""

import pytest
from twilio.request_validator import HMAC_SHA256, RequestValidator

from functions.intake import admission
from functions.intake.admission import Refusal, Signature, admit, signature_is_valid
from functions.intake.signed_url import request_url, signed_urls
from functions.storage.models import Tenant
from functions.tenancy import secrets, tenants
from functions.tenancy.secrets import TwilioCredentials

OURS = "AC" + "1" * 32
TENANT = "AC" + "2" * 32
OUR_NUMBER, TENANT_NUMBER = "whatsapp:+15550000001", "whatsapp:+15550000002"
URL = "https://abc.execute-api.us-east-1.amazonaws.com/prod/whatsapp"
KEY_SID = "webhooks_sharedkey_1"
CREDENTIALS = {
    OURS: TwilioCredentials(account_sid=OURS, auth_token="our-token"),
    TENANT: TwilioCredentials(
        account_sid=TENANT,
        auth_token="tenant-token",
        signing_keys={KEY_SID: "shared-key-secret"},
    ),
}
TENANTS = {
    OURS: Tenant(account_sid=OURS, numbers=[OUR_NUMBER]),
    TENANT: Tenant(account_sid=TENANT, numbers=[TENANT_NUMBER]),
}


@pytest.fixture(autouse=True)
def known_accounts(monkeypatch):
    monkeypatch.setattr(tenants, "find", TENANTS.get)
    monkeypatch.setattr(
        secrets, "tenant_twilio_credentials", lambda sid, token_version="": CREDENTIALS.get(sid)
    )


def _signed(form: dict[str, str], token: str, url: str = URL, algorithm: str | None = None) -> str:
    return RequestValidator(token).compute_signature(url, form, algorithm)


def _form(account: str = OURS, to: str = OUR_NUMBER, **extra: str) -> dict[str, str]:
    return {"AccountSid": account, "To": to, "From": "whatsapp:+15551234567", "Body": "hi", **extra}


def test_a_request_signed_by_a_tenant_for_its_own_number_is_admitted():
    form = _form()
    assert admit(form, URL, Signature(_signed(form, "our-token"))) == TENANTS[OURS]


def test_each_account_is_checked_with_its_own_token():
    form = _form(TENANT, TENANT_NUMBER)
    assert admit(form, URL, Signature(_signed(form, "tenant-token"))) == TENANTS[TENANT]
    assert admit(form, URL, Signature(_signed(form, "our-token"))) is Refusal.BAD_SIGNATURE


def test_a_tenant_cannot_post_for_another_tenants_number():
    form = _form(OURS, TENANT_NUMBER)  # A's account and token, B's number
    assert admit(form, URL, Signature(_signed(form, "our-token"))) is Refusal.NOT_ITS_NUMBER


@pytest.mark.parametrize(
    ("form", "signature", "refusal"),
    [
        (_form(), None, Refusal.NO_SIGNATURE),
        (_form(), "forged", Refusal.BAD_SIGNATURE),
        ({"Body": "hi", "To": OUR_NUMBER}, "anything", Refusal.MALFORMED_ACCOUNT),
        (_form("AC/../secret"), "anything", Refusal.MALFORMED_ACCOUNT),
        (_form("AC" + "9" * 32), "anything", Refusal.UNKNOWN_ACCOUNT),
    ],
)
def test_invalid_requests_are_refused(form, signature, refusal):
    assert admit(form, URL, Signature(signature)) is refusal


def test_nothing_is_looked_up_for_a_malformed_account(monkeypatch):
    def no_lookup(account_sid):
        raise AssertionError("looked up")

    monkeypatch.setattr(tenants, "find", no_lookup)
    monkeypatch.setattr(secrets, "tenant_twilio_credentials", no_lookup)
    assert admit(_form("ACnot-a-sid"), URL, Signature("anything")) is Refusal.MALFORMED_ACCOUNT


def test_no_credentials_are_read_for_a_number_the_account_does_not_own(monkeypatch):
    monkeypatch.setattr(
        secrets, "tenant_twilio_credentials", lambda sid, version="": pytest.fail("read a token")
    )
    assert admit(_form(OURS, TENANT_NUMBER), URL, Signature("anything")) is Refusal.NOT_ITS_NUMBER


def test_a_signature_over_another_url_or_other_fields_is_refused():
    form = _form()
    assert not signature_is_valid(
        CREDENTIALS[OURS], form, URL, Signature(_signed(form, "our-token", URL.replace("prod", "dev")))
    )
    assert not signature_is_valid(
        CREDENTIALS[OURS], {**form, "Body": "changed"}, URL, Signature(_signed(form, "our-token"))
    )


def test_a_webhook_signed_with_a_shared_key_and_hmac_sha256_is_valid():
    form = _form(TENANT, TENANT_NUMBER)
    settings = f"key={KEY_SID},algorithm=HMAC_SHA256"
    signature = _signed(form, "shared-key-secret", algorithm=HMAC_SHA256)

    assert admit(form, URL, Signature(signature, settings)) == TENANTS[TENANT]
    assert admit(form, URL, Signature(signature, "key=webhooks_sharedkey_other,algorithm=HMAC_SHA256")) is (
        Refusal.BAD_SIGNATURE
    )  # a key the tenant has not registered
    assert (
        admit(form, URL, Signature(signature, f"key={KEY_SID},algorithm=HMAC_MD5")) is Refusal.BAD_SIGNATURE
    )
    # the auth token's SHA-1 signature does not pass for a request that names a shared key
    assert admit(form, URL, Signature(_signed(form, "tenant-token"), settings)) is Refusal.BAD_SIGNATURE


def test_the_shared_key_is_read_from_the_settings_header():
    assert admission._shared_key_sid(f" key={KEY_SID} , algorithm=HMAC_SHA256") == KEY_SID
    assert admission._shared_key_sid("algorithm=HMAC_SHA256") == ""


# --- the URL the signature covers -----------------------------------------------------------


def test_the_public_url_is_rebuilt_from_host_and_stage_path(configure):
    configure(WEBHOOK_BASE_URL="")  # (the local stack of other tests sets one)
    event = {
        "path": "/whatsapp",
        "headers": {"Host": "abc.execute-api.us-east-1.amazonaws.com", "X-Forwarded-Proto": "https"},
        "requestContext": {"path": "/prod/whatsapp", "stage": "prod"},
    }
    assert request_url(event) == URL


def test_the_configured_base_url_and_the_resource_make_the_url(configure):
    configure(WEBHOOK_BASE_URL="https://hooks.example.com/burst/")
    event = {
        "resource": "/whatsapp",
        "path": "/burst/whatsapp",
        "headers": {"Host": "evil.example", "X-Forwarded-Host": "evil.example"},
        "requestContext": {"path": "/burst/whatsapp"},
    }
    assert request_url(event) == "https://hooks.example.com/burst/whatsapp"


def test_forwarded_headers_count_only_when_trusted(configure):
    configure(WEBHOOK_BASE_URL="")
    event = {
        "path": "/whatsapp",
        "headers": {
            "Host": "internal:8080",
            "X-Forwarded-Proto": "http",
            "X-Forwarded-Host": "public.example",
        },
        "requestContext": {"path": "/whatsapp"},
    }
    assert request_url(event) == "https://internal:8080/whatsapp"
    configure(WEBHOOK_TRUST_FORWARDED_HEADERS="true")
    assert request_url(event) == "http://public.example/whatsapp"


def test_the_raw_query_string_is_kept_exactly_when_the_event_has_it(configure):
    configure(WEBHOOK_BASE_URL="https://hooks.example.com")
    raw = "b=%7e&a=1+2&a=3"
    event = {"resource": "/sms", "rawQueryString": raw, "queryStringParameters": {"a": "1 2,3", "b": "~"}}
    assert request_url(event) == f"https://hooks.example.com/sms?{raw}"


def test_a_rest_api_query_is_re_encoded_in_the_order_received(configure):
    configure(WEBHOOK_BASE_URL="https://hooks.example.com")
    event = {
        "resource": "/sms",
        "queryStringParameters": {"tenant": "b", "x": "1 2"},
        "multiValueQueryStringParameters": {"tenant": ["b"], "x": ["1 2", "3"]},
    }
    assert request_url(event) == "https://hooks.example.com/sms?tenant=b&x=1+2&x=3"


# --- connection overrides: the URL Twilio was given ends with #rc=...&rp=... ---------------


@pytest.mark.parametrize("signed", [URL, URL + "#rc=5&rp=all"], ids=["without", "with"])
def test_a_signature_over_the_url_with_or_without_our_overrides_is_admitted(configure, signed):
    configure(TWILIO_CONNECTION_OVERRIDES="rc=5&rp=all")
    form = _form()
    assert admit(form, URL, Signature(_signed(form, "our-token", signed))) == TENANTS[OURS]


def test_a_signature_over_other_overrides_is_refused(configure):
    configure(TWILIO_CONNECTION_OVERRIDES="rc=5&rp=all")
    form = _form()
    signature = Signature(_signed(form, "our-token", URL + "#rc=1"))
    assert admit(form, URL, signature) is Refusal.BAD_SIGNATURE


def test_a_shared_key_signature_over_the_url_with_overrides_is_admitted(configure):
    configure(TWILIO_CONNECTION_OVERRIDES="rc=5&rp=all")
    form = _form(TENANT, TENANT_NUMBER)
    value = _signed(form, "shared-key-secret", URL + "#rc=5&rp=all", HMAC_SHA256)
    signature = Signature(value, f"key={KEY_SID},algorithm=HMAC_SHA256")
    assert admit(form, URL, signature) == TENANTS[TENANT]


def test_a_base_url_configured_with_overrides_gives_their_fragment_and_a_clean_url(configure):
    configure(WEBHOOK_BASE_URL="https://hooks.example.com/burst/#rc=3&rp=5xx", TWILIO_CONNECTION_OVERRIDES="")
    event = {"resource": "/whatsapp", "path": "/burst/whatsapp"}
    assert request_url(event) == "https://hooks.example.com/burst/whatsapp"
    assert signed_urls(request_url(event)) == [
        "https://hooks.example.com/burst/whatsapp",
        "https://hooks.example.com/burst/whatsapp#rc=3&rp=5xx",
    ]


def test_the_status_callbacks_resource_is_signed_with_its_path_parameters_filled_in(configure):
    configure(WEBHOOK_BASE_URL="https://hooks.example.com/prod")
    event = {
        "resource": "/twilio/status/{conversation}/{window}/{message}",
        "path": "/twilio/status/c1/1795000000000-abc123/0",
        "pathParameters": {"conversation": "c1", "window": "1795000000000-abc123", "message": "0"},
    }
    assert request_url(event) == "https://hooks.example.com/prod/twilio/status/c1/1795000000000-abc123/0"
