"""Speech to text with OpenAI's transcription API (`POST /v1/audio/transcriptions`,
https://platform.openai.com/docs/api-reference/audio/createTranscription): a voice note
becomes the text the model is given. The file goes with a name whose extension says
its format ("flac, mp3, mp4, mpeg, mpga, m4a, ogg, wav, or webm"; the SDK asks for "an
extension-bearing filename and an appropriate content type"). Any failure is a
TranscriptionFailed: the caller degrades to saying a voice note was sent."""

from __future__ import annotations

import openai

# MIME type → the extension OpenAI recognises the format by.
FORMATS = {
    "audio/ogg": "ogg",
    "audio/opus": "ogg",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/mp4": "m4a",
    "audio/x-m4a": "m4a",
    "audio/m4a": "m4a",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/webm": "webm",
    "audio/flac": "flac",
}


class TranscriptionFailed(Exception):
    """The recording could not be transcribed: the reason, without its content."""


def transcribe(
    client: openai.OpenAI, audio: bytes, name: str, content_type: str, model: str, timeout: float
) -> str:
    """What the recording says. `name` is given the extension of `content_type`."""
    extension = FORMATS.get(content_type)
    if extension is None:
        raise TranscriptionFailed(f"a format the transcription API does not take ({content_type})")
    try:
        result = client.with_options(timeout=timeout, max_retries=0).audio.transcriptions.create(
            model=model, file=(f"{name}.{extension}", audio, content_type)
        )
    except openai.APIStatusError as error:
        raise TranscriptionFailed(f"OpenAI HTTP {error.status_code} {error.code or ''}".strip()) from error
    except openai.OpenAIError as error:
        raise TranscriptionFailed(f"OpenAI unreachable: {type(error).__name__}") from error
    return (result if isinstance(result, str) else result.text).strip()
