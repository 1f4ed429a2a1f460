"""The model's input for a user turn (the Responses API's `input`), built inside Generate
Reply from the recorded user turn and its media.

A turn without media to load is its text, as it is recorded (without control and
bidirectional-override characters: functions/answer/rules/sanitize.py). Otherwise each media
line of the turn (functions/answer/rules/content.py) is kept in its place, and:
  - a photo loaded is given right after its line, as an `input_image` (a base64 data URL:
    "a fully qualified URL or base64 encoded image in a data URL",
    https://platform.openai.com/docs/api-reference/responses/create), so that the input
    is one user message whose text and images alternate in arrival order;
  - a voice note transcribed is replaced by `[voice note 2, transcribed] <what it says>`,
    its brackets escaped as a person's text is (sanitize.escaped): a transcript never reads
    like one of the service's lines;
  - a media item that could not be loaded keeps its line, which then says so.
Only a turn with images becomes a list; text and transcripts alone stay a string. A turn
with images also has a text-only input, each photo's line saying it could not be shown:
what the model is asked with when OpenAI refuses one of the images (ai_requests.py)."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any, cast

import openai

from functions.answer import media
from functions.answer.media import VOICE, Loaded
from functions.answer.rules.sanitize import escaped, model_input
from functions.storage.models import Conversation, Turn, TurnMedia

if TYPE_CHECKING:
    from openai.types.responses import ResponseInputParam


def for_model(conversation: Conversation, user_turn: Turn, client: openai.OpenAI) -> str | ResponseInputParam:
    return inputs_for_model(conversation, user_turn, client)[0]


def inputs_for_model(
    conversation: Conversation, user_turn: Turn, client: openai.OpenAI
) -> tuple[str | ResponseInputParam, str | None]:
    """The model's input, and the same turn without its images (None if it has none)."""
    loaded = media.load(conversation, user_turn, client)
    if not loaded:
        return model_input(user_turn.body), None
    given = assemble(user_turn.body, user_turn.media, loaded)
    if isinstance(given, str):
        return given, None
    return given, cast("str", assemble(user_turn.body, user_turn.media, loaded, images=False))


def assemble(
    body: str, items: list[TurnMedia], loaded: dict[int, Loaded], images: bool = True
) -> str | ResponseInputParam:
    """The turn's text, each media line replaced by what was loaded for it; `images`
    False: each photo loaded is not given, its line says it could not be shown."""
    content: list[dict[str, Any]] = []
    pieces: list[str] = []
    cursor = 0
    for item in sorted(items, key=lambda m: m.offset):
        pieces.append(body[cursor : item.offset])
        line, cursor = body[item.offset : item.offset + item.length], item.offset + item.length
        got = loaded.get(item.number)
        if got is None:
            pieces.append(line)
        elif got.transcript is not None:
            pieces.append(f"[{item.kind} {item.number}, transcribed] {escaped(got.transcript)}")
        elif got.image is not None and not images:
            pieces.append(f"{line[:-1]}, which could not be shown]")
        elif got.image is not None:
            pieces.append(line)
            _add_text(content, pieces)
            image_type, data = got.image
            image_url = f"data:{image_type};base64,{base64.b64encode(data).decode()}"
            content.append({"type": "input_image", "image_url": image_url, "detail": "auto"})
        else:
            undone = "transcribed" if item.kind in VOICE else "loaded"
            pieces.append(f"{line[:-1]}, which could not be {undone}]")
    pieces.append(body[cursor:])
    _add_text(content, pieces)
    if not any(part["type"] == "input_image" for part in content):
        return "\n".join(part["text"] for part in content)
    return cast("ResponseInputParam", [{"role": "user", "content": content}])


def _add_text(content: list[dict[str, Any]], pieces: list[str]) -> None:
    """The text gathered so far, as one input_text part (pieces are consumed)."""
    text = model_input("".join(pieces)).strip("\n")
    pieces.clear()
    if text:
        content.append({"type": "input_text", "text": text})


def text_of(model_input: str | ResponseInputParam) -> str:
    """The text of a model input, as the conversation's item will read (its text parts,
    one per line): what an earlier copy of it is recognised by."""
    if isinstance(model_input, str):
        return model_input
    messages = cast("list[dict[str, Any]]", model_input)
    parts = [part for message in messages for part in message.get("content", [])]
    return "\n".join(str(part["text"]) for part in parts if part.get("type") == "input_text")
