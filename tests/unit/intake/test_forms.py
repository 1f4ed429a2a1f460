"""What the webhook reads before anything else: a bounded, well-formed UTF-8 form."""

import base64

import pytest

from functions.intake.inbound import UnreadableForm, read_form

LIMITS = {"max_bytes": 1024, "max_fields": 10}


def test_a_form_is_read_with_its_percent_escapes_and_blank_values():
    assert read_form("Body=caf%C3%A9+%F0%9F%91%8B&NumMedia=0&Empty=", False, **LIMITS) == {
        "Body": "café 👋",
        "NumMedia": "0",
        "Empty": "",
    }


def test_a_base64_body_is_decoded_first():
    body = base64.b64encode(b"Body=hi&To=%2B1555").decode()
    assert read_form(body, True, **LIMITS) == {"Body": "hi", "To": "+1555"}


@pytest.mark.parametrize(
    ("body", "encoded", "status"),
    [
        ("Body=" + "x" * 2000, False, 413),  # over the byte limit
        (base64.b64encode(b"Body=" + b"x" * 2000).decode(), True, 413),
        ("x" * 10_000_000, False, 413),  # refused before anything is decoded
        ("&".join(f"F{i}=1" for i in range(11)), False, 400),  # too many fields
        ("Body=%FF%FE", False, 400),  # an escape that is not UTF-8
        (base64.b64encode(b"Body=\xff\xfe").decode(), True, 400),  # raw bytes that are not UTF-8
        ("not base64!", True, 400),
        ("Body=a&Body=b", False, 400),  # a repeated field
        ("Body=\ud800", False, 400),  # a lone surrogate cannot be UTF-8
    ],
)
def test_an_unreadable_form_is_refused_with_its_status(body, encoded, status):
    with pytest.raises(UnreadableForm) as refused:
        read_form(body, encoded, **LIMITS)
    assert refused.value.status == status
