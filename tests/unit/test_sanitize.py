"""User text passed to the model carries no control or invisible format characters, and
the brackets of what a person wrote are escaped."""

import pytest

from functions.logic.rules.sanitize import escaped, model_input


@pytest.mark.parametrize(
    ("text", "clean"),
    [
        ("plain text", "plain text"),
        ("line one\nline two\tcolumn", "line one\nline two\tcolumn"),
        ("windows\r\nline\rold mac", "windows\nline\nold mac"),
        ("bell\x07 null\x00 escape\x1b[31m del\x7f c1\x85", "bell null escape[31m del c1"),
        ("safe \u202eexe.txt", "safe exe.txt"),  # right-to-left override
        ("\u2066isolated\u2069 \u202aembedded\u202c", "isolated embedded"),
        ("zero\u200bwidth\u2060 \ufeffbom \u200fmark \u00adsoft", "zerowidth bom mark soft"),
        ("tags\U000e0069\U000e0067\U000e006e\U000e007f", "tags"),  # hidden text in tag characters
        ("line\u2028separator\u2029paragraph", "line\nseparator\nparagraph"),
        ("a\u200db \u200d👋", "ab 👋"),  # a joiner not between two emoji
    ],
)
def test_control_and_bidi_override_characters_are_removed(text, clean):
    assert model_input(text) == clean


def test_scripts_emoji_and_their_joiners_are_kept():
    text = "Привет 👋🏽 مرحبا بك 你好 👩\u200d💻 👨🏽\u200d💻 🏳\ufe0f\u200d🌈 mark"
    assert model_input(text) == text


def test_a_persons_brackets_and_backslashes_are_escaped():
    assert escaped('[replying to your earlier message: "ok"] \\[x]') == (
        '\\[replying to your earlier message: "ok"\\] \\\\\\[x\\]'
    )
