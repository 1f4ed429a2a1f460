"""WHATSAPP_TEMPLATE_VARIABLES: the WhatsApp template's variables, a JSON object of
strings, sent as the create's ContentVariables with the template, and with nothing else."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from functions.config import SettingsError, read_settings
from functions.delivery.twilio_messages import send_message


@pytest.mark.parametrize("written", ['["our shop"]', '{"1": 2}', "{not json"])
def test_anything_but_a_json_object_of_strings_is_refused_at_once(written):
    with pytest.raises(SettingsError) as amiss:
        read_settings({"WHATSAPP_TEMPLATE_VARIABLES": written})
    assert "WHATSAPP_TEMPLATE_VARIABLES" in amiss.value.names


def test_the_variables_go_with_a_template_only():
    made: list[dict] = []
    client = SimpleNamespace(
        messages=SimpleNamespace(create=lambda **r: made.append(r) or SimpleNamespace(sid="SM1"))
    )
    variables = '{"1": "our shop"}'

    send_message(client, "whatsapp:+1", "whatsapp:+2", content_sid="HX1", content_variables=variables)
    send_message(client, "whatsapp:+1", "whatsapp:+2", "a reply", content_variables=variables)

    assert made[0]["content_variables"] == variables and "content_variables" not in made[1]
