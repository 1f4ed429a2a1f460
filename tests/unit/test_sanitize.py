"""User text passed to the model carries no control or bidirectional-override characters."""

import pytest

from functions.logic.rules.sanitize import model_input


@pytest.mark.parametrize(
    ("text", "clean"),
    [
        ("plain text", "plain text"),
        ("line one\nline two\tcolumn", "line one\nline two\tcolumn"),
        ("windows\r\nline\rold mac", "windows\nline\nold mac"),
        ("bell\x07 null\x00 escape\x1b[31m del\x7f c1\x85", "bell null escape[31m del c1"),
        ("safe \u202eexe.txt", "safe exe.txt"),  # right-to-left override
        ("\u2066isolated\u2069 \u202aembedded\u202c", "isolated embedded"),
    ],
)
def test_control_and_bidi_override_characters_are_removed(text, clean):
    assert model_input(text) == clean


def test_scripts_emoji_and_joiners_are_kept():
    text = "Привет 👋🏽 مرحبا بك 你好 👩\u200d💻 \u200fmark"
    assert model_input(text) == text
