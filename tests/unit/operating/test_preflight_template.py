"""Preflight's WhatsApp template check (infra/preflight_template.py): a template with
variables is refused unless WHATSAPP_TEMPLATE_VARIABLES gives them, since Twilio would send
the person its sample values; without credentials, it says it did not check. The senders
check: the Messaging Service must hold a WhatsApp sender and every expected one, read from
a fake of twilio's client (no network)."""

from __future__ import annotations

from types import SimpleNamespace

from infra.preflight_template import check, check_senders

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


MG = "MG" + "4" * 32
OURS = "whatsapp:+14155238886"
CONFIGURED = {"WHATSAPP_TEMPLATE_CONTENT_SID": HX, "TWILIO_MESSAGING_SERVICE_SID": MG}


class FakeTwilio:
    """The part of twilio's Client the senders check calls:
    client.messaging.v1.services(sid).phone_numbers.list() and .channel_senders.list()."""

    def __init__(self, phone_numbers: list[str], channel_senders: list[str]):
        self.asked: list[str] = []
        self.messaging = SimpleNamespace(v1=SimpleNamespace(services=self._service))
        # The fields of twilio's PhoneNumberInstance and ChannelSenderInstance.
        self._phone_numbers = [SimpleNamespace(phone_number=n, capabilities=["SMS"]) for n in phone_numbers]
        self._channel_senders = [SimpleNamespace(sender=s, sender_type="WhatsApp") for s in channel_senders]

    def _service(self, sid: str) -> SimpleNamespace:
        self.asked.append(sid)
        return SimpleNamespace(
            phone_numbers=SimpleNamespace(list=lambda: self._phone_numbers),
            channel_senders=SimpleNamespace(list=lambda: self._channel_senders),
        )


def test_a_messaging_service_without_a_whatsapp_sender_is_refused():
    client = FakeTwilio(phone_numbers=["+14155238886"], channel_senders=[])
    ok, detail = check_senders(CONFIGURED, client, expected=[])
    assert not ok and client.asked == [MG]
    assert "no WhatsApp sender" in detail and "60727" in detail


def test_an_expected_sender_missing_from_the_service_is_refused_by_name():
    other = "whatsapp:+15005550006"
    client = FakeTwilio(phone_numbers=[], channel_senders=[OURS])
    ok, detail = check_senders(CONFIGURED, client, expected=[OURS, other])
    assert not ok and other in detail and OURS not in detail


def test_a_service_holding_every_expected_sender_passes(monkeypatch):
    client = FakeTwilio(phone_numbers=[], channel_senders=[OURS, "whatsapp:+15005550006"])
    monkeypatch.setenv("TWILIO_WHATSAPP_SENDERS", f" {OURS}, +15005550006 ")
    ok, detail = check_senders(CONFIGURED, client)
    assert ok and "all 2" in detail


def test_the_senders_are_not_checked_without_credentials_or_a_template(monkeypatch):
    monkeypatch.delenv("TWILIO_ACCOUNT_SID", raising=False)
    monkeypatch.delenv("TWILIO_AUTH_TOKEN", raising=False)
    ok, detail = check_senders(CONFIGURED)
    assert ok and "not checked" in detail
    assert check_senders({})[0]
    ok, detail = check_senders({"WHATSAPP_TEMPLATE_CONTENT_SID": HX})
    assert not ok and "TWILIO_MESSAGING_SERVICE_SID" in detail
