"""Loading a user turn's media for the model, inside Generate Reply (never through the
run's state, which keeps keys and counts only): each photo is fetched from Twilio with
the tenant's credentials (functions/answer/twilio_media.py) to be given to the
model as an image; each voice note is fetched and transcribed
(functions/answer/openai_audio.py). Other media are not fetched: the model is told
their type (functions/answer/rules/content.py).

Nothing here fails the batch: a fetch or a transcription that fails, a file too large, a
photo that is not an image the model reads (PNG, JPEG or WEBP, told by its first bytes;
a GIF may be animated, which the model does not take), or the time budget spent, leaves
the media's line saying it could not be loaded. Transcripts are kept with the user turn,
so a retry of Generate Reply does not transcribe again; each transcription counts as an AI
call (functions/guards/limits.py)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import openai

from functions.answer import openai_audio, turns, twilio_media
from functions.answer.openai_audio import TranscriptionFailed
from functions.answer.rules.content import MediaKind, mime_type
from functions.answer.settings import MediaSettings
from functions.answer.twilio_media import MediaUnavailable
from functions.guards import limits
from functions.observability import count, logger
from functions.storage.models import Conversation, Turn, TurnMedia
from functions.tenancy import secrets
from functions.tenancy.secrets import TwilioCredentials

MAX_TRANSCRIPT_CHARS = 4_000  # about five minutes of speech
PARALLEL_FETCHES = 4
# "Supported file types: PNG, JPEG, WEBP, Non-animated GIF"
# (https://platform.openai.com/docs/guides/images-vision), told by their first bytes.
_IMAGES = (
    ("image/jpeg", b"\xff\xd8\xff", b""),
    ("image/png", b"\x89PNG\r\n\x1a\n", b""),
    ("image/webp", b"RIFF", b"WEBP"),
)
VOICE = (MediaKind.VOICE_NOTE.value, MediaKind.AUDIO.value)


@dataclass(frozen=True)
class Loaded:
    """What became of one media item: an image, a transcript, or why neither."""

    image: tuple[str, bytes] | None = None  # (MIME type, data)
    transcript: str | None = None
    failure: str | None = None
    transcribed: bool = False  # OpenAI answered a transcription for it (a billed request)


def wanted(media: TurnMedia, settings: MediaSettings) -> bool:
    """Whether a media item is loaded for the model at all."""
    if media.kind == MediaKind.PHOTO:
        return settings.media_image_input
    return media.kind in VOICE and settings.media_voice_transcription


def load(conversation: Conversation, user_turn: Turn, client: openai.OpenAI) -> dict[int, Loaded]:
    """Each wanted media item of the turn, loaded or not, by its number."""
    settings = MediaSettings.get()
    loaded = {
        m.number: Loaded(transcript=user_turn.transcripts[str(m.number)])
        for m in user_turn.media
        if wanted(m, settings) and str(m.number) in user_turn.transcripts
    }
    todo = [m for m in user_turn.media if wanted(m, settings) and m.number not in loaded]
    if not todo:
        return loaded
    try:
        credentials = secrets.twilio_credentials_in_tenant_session(conversation)
    except Exception as error:  # the tenant's credentials: their absence is Send Reply's error
        logger.warning("No Twilio credentials to fetch media", extra={"error": type(error).__name__})
        return loaded | {m.number: Loaded(failure="not loaded") for m in todo}
    loader = _Loader(credentials, client, settings)
    with ThreadPoolExecutor(max_workers=PARALLEL_FETCHES) as pool:
        fresh = dict(zip((m.number for m in todo), pool.map(loader.load, todo), strict=True))
    _report(todo, fresh)
    transcripts = {str(n): got.transcript for n, got in fresh.items() if got.transcript is not None}
    if transcripts:
        try:
            turns.record_transcripts(
                user_turn.conversation_id, user_turn.turn_id, {**user_turn.transcripts, **transcripts}
            )
        except Exception as error:  # a record that could not be kept: a retry transcribes again
            logger.warning("Transcripts not kept with the user turn", extra={"error": type(error).__name__})
    _count_transcriptions(conversation, sum(1 for got in fresh.values() if got.transcribed))
    return loaded | fresh


def _count_transcriptions(conversation: Conversation, transcriptions: int) -> None:
    """Each transcription is an AI call, counted as one, once: a retry finds the transcripts
    kept with the user turn and does not transcribe again (if they were not kept, it does,
    and is billed and counted again). A count that fails does not fail the batch."""
    try:
        limits.count_transcriptions(conversation, transcriptions)
    except Exception as error:
        logger.warning("Transcriptions not counted", extra={"error": type(error).__name__})
        count("TranscriptionsNotCounted")


class _Loader:
    """Loads one media item at a time, from several threads, within the batch's time and
    byte budgets."""

    def __init__(
        self, credentials: TwilioCredentials, client: openai.OpenAI, settings: MediaSettings
    ) -> None:
        self.credentials, self.client, self.settings = credentials, client, settings
        self.deadline = time.monotonic() + settings.media_time_budget_seconds
        self.budget = twilio_media.ByteBudget(settings.media_max_batch_bytes)  # reserved before a read

    def load(self, media: TurnMedia) -> Loaded:
        try:
            fetched = twilio_media.fetch(
                media.url, self.credentials, self.settings.media_max_bytes, self.deadline, budget=self.budget
            )
            if media.kind == MediaKind.PHOTO:
                image_type = sniff_image(fetched.data)
                if image_type is None:
                    return Loaded(failure="not an image the model reads")
                return Loaded(image=(image_type, fetched.data))
            text = openai_audio.transcribe(
                self.client,
                fetched.data,
                f"voice-note-{media.number}",
                mime_type(media.content_type) or fetched.content_type,
                self.settings.transcription_model,
                max(1.0, self.deadline - time.monotonic()),
            )
            if not text:
                return Loaded(failure="no speech heard", transcribed=True)
            return Loaded(transcript=text[:MAX_TRANSCRIPT_CHARS], transcribed=True)
        except (MediaUnavailable, TranscriptionFailed) as error:
            return Loaded(failure=str(error))
        except Exception as error:  # whatever it is, a media item never fails the batch
            return Loaded(failure=f"unexpected {type(error).__name__}")


def sniff_image(data: bytes) -> str | None:
    """The image type the model reads that `data` is, by its first bytes; else None."""
    for image_type, start, at_eight in _IMAGES:
        if data.startswith(start) and data[8:12].startswith(at_eight):
            return image_type
    return None


def _report(todo: list[TurnMedia], fresh: dict[int, Loaded]) -> None:
    """Counts and reasons only: media, transcripts and URLs are personal data."""
    failures = {m.number: fresh[m.number].failure for m in todo if fresh[m.number].failure}
    for media in todo:
        if media.number in failures:
            logger.warning(
                "Media not loaded for the model",
                extra={"media_number": media.number, "kind": media.kind, "reason": failures[media.number]},
            )
    logger.info("Media loaded for the model", extra={"media": len(todo), "not_loaded": len(failures)})
    count("MediaLoaded", len(todo) - len(failures))
    if failures:
        count("MediaNotLoaded", len(failures))
