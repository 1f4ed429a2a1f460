"""Preflight's WhatsApp template check (infra/preflight_template.py): a template with
variables is refused unless WHATSAPP_TEMPLATE_VARIABLES gives them, since Twilio would send
the person its sample values; without credentials, it says it did not check."""

from __future__ import annotations

from infra.preflight_template import check

HX = "HX" + "3" * 32


def _template(variables: dict[str, str]):
    return lambda content_sid: dict(variables) if content_sid == HX else {}


def test_a_template_with_variables_not_given_is_refused():
    ok, detail = check({"WHATSAPP_TEMPLATE_CONTENT_SID": HX}, _template({"1": "Customer_Name"}))
    assert not ok and "1" in detail and "WHATSAPP_TEMPLATE_VARIABLES" in detail


def test_a_template_whose_variables_are_given_or_that_has_none_passes():
    given = {"WHATSAPP_TEMPLATE_CONTENT_SID": HX, "WHATSAPP_TEMPLATE_VARIABLES": '{"1": "our shop"}'}
    assert check(given, _template({"1": "Customer_Name"}))[0]
    assert check({"WHATSAPP_TEMPLATE_CONTENT_SID": HX}, _template({}))[0]


def test_a_template_twilio_does_not_find_is_refused():
    def not_found(content_sid: str) -> dict:
        raise LookupError(content_sid)

    ok, detail = check({"WHATSAPP_TEMPLATE_CONTENT_SID": HX}, not_found)
    assert not ok and "not fetched" in detail


def test_without_credentials_it_says_it_did_not_check(monkeypatch):
    monkeypatch.delenv("TWILIO_ACCOUNT_SID", raising=False)
    monkeypatch.delenv("TWILIO_AUTH_TOKEN", raising=False)
    ok, detail = check({"WHATSAPP_TEMPLATE_CONTENT_SID": HX})
    assert ok and "not checked" in detail
    assert check({}) == (True, "none configured")
