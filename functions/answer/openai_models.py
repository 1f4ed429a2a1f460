"""OpenAI's models as the project knows them, in one place: the default, the models served
with no shutdown announced, and every announced shutdown (model → date). After its date
a model answers 404 `model_not_found`.

Used by the settings (the default model), by the OpenAI stand-in (a model past its date,
or one it does not know, answers that 404), by `make synth` and `make preflight` (a warning
when a configured model is within WARN_DAYS of its shutdown), and by the requests (which
models take a reasoning effort). No side effects on import.

Sources, as of 2026-11-26: OpenAI's deprecations page,
https://developers.openai.com/api/docs/deprecations ("2026-06-11: GPT-5 and o3 model
deprecations": gpt-5-mini → gpt-6.1-terra), and the `openai` SDK's notes on its model
list (openai/types/shared/chat_model.py, "Announced shutdown date: ...") and on every
other model it names (speech to text: types/audio_model.py; the Responses-only models;
realtime; speech)."""

from __future__ import annotations

import re
from datetime import date

from functions import default_model

SOURCE = "https://developers.openai.com/api/docs/deprecations"

# The settings' default (a leaf module, which the settings import), named here too.
DEFAULT_MODEL = default_model.DEFAULT_MODEL
WARN_DAYS = 30

# Served, no shutdown announced (the SDK's model list without its deprecated values).
CURRENT_MODELS = frozenset(
    {
        "gpt-6-astra",
        "gpt-6.2-astra",
        "gpt-6.1-sol",
        "gpt-6.2-sol",
        "gpt-6.1-terra",
        "gpt-6-sol",
        "gpt-6-luna",
        "gpt-5.6-sol",
        "gpt-5.6-terra",
        "gpt-5.6-luna",
        "gpt-5.5",
        "gpt-5.5-2026-04-23",
        "gpt-5.4",
        "gpt-5.4-mini",
        "gpt-5.4-mini-2026-03-17",
        "gpt-5.2",
        "gpt-5.2-2025-12-11",
        "gpt-5.2-pro",
        "gpt-5.2-pro-2025-12-11",
        "gpt-transcribe",  # TRANSCRIPTION_MODEL's default (the SDK's AudioModel, not deprecated)
    }
)

_ANNOUNCED: dict[str, tuple[str, ...]] = {
    "2027-04-01": ("gpt-5.4-nano", "gpt-5.4-nano-2026-03-17", "gpt-5.1", "gpt-5.1-2025-11-13"),
    # Speech to text (the SDK's AudioModel notes): TRANSCRIPTION_MODEL's choices.
    "2027-02-26": (
        "whisper-1",
        "gpt-4o-transcribe",
        "gpt-4o-mini-transcribe",
        "gpt-4o-mini-transcribe-2025-12-15",
        "gpt-4o-transcribe-diarize",
    ),
    "2027-01-20": (
        "gpt-audio-mini",
        "gpt-audio-mini-2025-12-15",
        "gpt-realtime",
        "gpt-realtime-2025-08-28",
        "gpt-realtime-mini",
        "gpt-realtime-mini-2025-12-15",
    ),
    "2027-01-14": (
        "gpt-4.1",
        "gpt-4.1-mini",
        "gpt-4.1-2025-04-14",
        "gpt-4.1-mini-2025-04-14",
        "gpt-4o",
        "gpt-4o-2024-11-20",
        "gpt-4o-2024-08-06",
        "gpt-4o-mini",
        "gpt-4o-mini-2024-07-18",
    ),
    "2027-01-06": ("tts-1", "tts-1-hd", "gpt-4o-mini-tts", "gpt-4o-mini-tts-2025-12-15"),
    "2026-12-11": (
        "gpt-5",
        "gpt-5-mini",
        "gpt-5-nano",
        "gpt-5-2025-08-07",
        "gpt-5-mini-2025-08-07",
        "gpt-5-nano-2025-08-07",
        "gpt-5-pro",
        "gpt-5-pro-2025-10-06",
        "o3",
        "o3-2025-04-16",
        "o3-pro",
        "o3-pro-2025-06-10",
    ),
    "2026-10-23": (
        "gpt-4.1-nano",
        "gpt-4.1-nano-2025-04-14",
        "o4-mini",
        "o4-mini-2025-04-16",
        "o3-mini",
        "o3-mini-2025-01-31",
        "o1",
        "o1-2024-12-17",
        "o1-pro",
        "o1-pro-2025-03-19",
        "gpt-4o-2024-05-13",
        "gpt-4-turbo",
        "gpt-4-turbo-2024-04-09",
        "gpt-4-1106-preview",
        "gpt-4",
        "gpt-4-0613",
        "gpt-3.5-turbo",
        "gpt-3.5-turbo-0125",
    ),
    "2026-09-28": ("gpt-3.5-turbo-1106",),
    "2026-08-10": ("gpt-5.3-chat-latest", "gpt-5.2-chat-latest"),
    "2026-07-23": (
        "gpt-5.1-codex",
        "gpt-5.1-codex-max",
        "gpt-5-codex",
        "o3-deep-research",
        "o3-deep-research-2025-06-26",
        "o4-mini-deep-research",
        "o4-mini-deep-research-2025-06-26",
        "computer-use-preview",
        "computer-use-preview-2025-03-11",
        "gpt-5.1-chat-latest",
        "gpt-5-chat-latest",
        "gpt-4o-search-preview",
        "gpt-4o-mini-search-preview",
        "gpt-4o-search-preview-2025-03-11",
        "gpt-4o-mini-search-preview-2025-03-11",
    ),
    "2026-05-07": (
        "gpt-4o-audio-preview",
        "gpt-4o-audio-preview-2024-12-17",
        "gpt-4o-audio-preview-2025-06-03",
        "gpt-4o-mini-audio-preview",
        "gpt-4o-mini-audio-preview-2024-12-17",
    ),
    "2026-03-26": ("gpt-4-0125-preview", "gpt-4-turbo-preview", "gpt-4-0314"),
    "2026-02-17": ("chatgpt-4o-latest",),
    "2026-02-12": ("codex-mini-latest",),
    "2025-10-27": ("o1-mini", "o1-mini-2024-09-12"),
    "2025-10-10": ("gpt-4o-audio-preview-2024-10-01",),
    "2025-07-28": ("o1-preview", "o1-preview-2024-09-12"),
    "2025-06-06": ("gpt-4-32k", "gpt-4-32k-0314", "gpt-4-32k-0613"),
    "2024-12-06": ("gpt-4-vision-preview",),
    "2024-09-13": ("gpt-3.5-turbo-16k", "gpt-3.5-turbo-0301", "gpt-3.5-turbo-0613", "gpt-3.5-turbo-16k-0613"),
}

# Model → the day OpenAI shuts it down (from that day on, 404 model_not_found).
SHUTDOWNS: dict[str, date] = {
    model: date.fromisoformat(day) for day, models in _ANNOUNCED.items() for model in models
}


def base_model(model: str) -> str:
    """A fine-tuned model (`ft:<base>:<org>:...`) follows its base model's schedule."""
    return model.split(":")[1] if model.startswith("ft:") and model.count(":") >= 2 else model


def shutdown_of(model: str) -> date | None:
    """The announced shutdown date of `model`, or None (none announced, or unknown)."""
    return SHUTDOWNS.get(base_model(model))


def served(model: str, today: date) -> bool:
    """Whether OpenAI serves `model` on `today`, as far as the list knows: a current
    model, or one whose shutdown date has not come."""
    shutdown = shutdown_of(model)
    if shutdown is not None:
        return today < shutdown
    return base_model(model) in CURRENT_MODELS


def takes_reasoning_effort(model: str) -> bool:
    """Whether a request for `model` may choose its reasoning effort (`reasoning.effort`,
    OPENAI_REASONING_EFFORT): a reasoning model, the o-series and GPT-5 on
    (https://developers.openai.com/api/docs/guides/reasoning), except those whose effort is
    not ours to choose. Other models refuse the parameter (400 unsupported_parameter)."""
    base = base_model(model)
    return bool(_REASONING_FAMILY.match(base)) and not any(part in base for part in _NO_EFFORT_CHOICE)


# The o-series and GPT-5 onwards reason.
_REASONING_FAMILY = re.compile(r"(o[1-9]|gpt-(?:[5-9]|[1-9][0-9]))([.-]|$)")
# Sent no effort: gpt-5-chat-latest does not reason and the later chat-latest aliases take
# only their default; the pro and deep-research models take one value only (`high`,
# `medium`); audio, search, realtime and speech models are not asked to reason.
_NO_EFFORT_CHOICE = (
    "-chat-latest",
    "-pro",
    "-deep-research",
    "audio",
    "search",
    "realtime",
    "transcribe",
    "tts",
)


def warn_if_retiring(
    model: str, today: date, days: int = WARN_DAYS, setting: str = "OPENAI_MODEL"
) -> str | None:
    """A warning when `model` is shut down within `days` of `today`, or already is;
    None otherwise (a model with no announced shutdown, or an unknown one)."""
    return retiring_warning(model, shutdown_of(model), today, days, setting)


def retiring_warning(
    model: str, shutdown: date | None, today: date, days: int = WARN_DAYS, setting: str = "OPENAI_MODEL"
) -> str | None:
    """The warning for `model` shut down on `shutdown` (None: no shutdown announced)."""
    if shutdown is None:
        return None
    left = (shutdown - today).days
    if left <= 0:
        return (
            f"{setting} {model} was shut down by OpenAI on {shutdown.isoformat()}: every request "
            f"answers 404 model_not_found. Choose another model (see {SOURCE})."
        )
    if left <= days:
        return (
            f"{setting} {model} is shut down by OpenAI on {shutdown.isoformat()}, in {left} "
            f"day{'s' if left != 1 else ''}. Choose another model before then (see {SOURCE})."
        )
    return None
