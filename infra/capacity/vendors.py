"""The vendors' limits, as components: the WhatsApp senders Twilio sends the replies from,
and OpenAI's rate limits on the organisation (infra/capacity/quotas.py has their values and
pages)."""

from __future__ import annotations

from infra.capacity import quotas
from infra.capacity.saturation import Component, Traffic, component


def twilio_senders(t: Traffic) -> list[Component]:
    """Twilio sends from one WhatsApp sender at its messages a second and queues the rest;
    Send Reply paces each part to it (functions/delivery/sender_pace.py): past it, a reply
    waits for its turn (up to 20 s an attempt), then is retried, then fails. The replies are
    spread evenly over the senders (--senders)."""
    a, configured = t.assumptions, float(t.values["twilio_sender_mps"])
    mps = configured or quotas.TWILIO_SENDER_MPS  # 0: not paced, Twilio still sends at its rate
    paced = "" if configured else "; TWILIO_SENDER_MPS=0: not paced, the excess waits in Twilio's queue"
    return [
        component(
            t,
            f"Twilio WhatsApp sender ({a.senders} sender(s), {mps:g} messages/s each)",
            "vendor limit",
            t.rates.reply_parts / a.senders,
            mps,
            "reply parts/s per sender",
            f"more senders (numbers: --senders), or ask Twilio for a higher rate (up to "
            f"{quotas.TWILIO_SENDER_MPS_ON_REQUEST}/s for text) and set TWILIO_SENDER_MPS or the "
            "number's own (python -m infra.tenants sender-mps)",
            True,
            f"past it, replies wait for their turn, then are retried (RepliesDeferredForSender){paced}",
        )
    ]


def openai_limits(t: Traffic) -> list[Component]:
    """The organisation's requests and tokens a minute for the model. A request is counted
    when it is created; the tokens as OpenAI's limiter reserves them when a request arrives:
    its input and its max_output_tokens (OpenAI's rate-limit guide: "Your rate limit is
    calculated as the maximum of max_tokens and the estimated number of tokens based on the
    character count of your request"; counted here as their sum, the worst case)."""
    a, model = t.assumptions, t.values["openai_model"]
    reserved = a.ai_input_tokens + int(t.values["openai_max_output_tokens"])
    tier = next(
        (
            tier.name
            for tier in quotas.OPENAI_TIERS
            if (tier.requests_per_minute, tier.tokens_per_minute) == (a.openai_rpm, a.openai_tpm)
        ),
        "your",
    )
    raise_by = (
        f"OpenAI's usage tier, or a higher limit asked of OpenAI ({quotas.OPENAI_LIMITS_PAGE}); "
        "--openai-rpm/--openai-tpm model yours"
    )
    calls = f"one per burst and per tool round ({1 + a.tool_rounds:g} a burst)"
    return [
        component(
            t,
            f"OpenAI requests per minute ({model}, {tier} tier)",
            "vendor limit",
            t.rates.ai_calls * 60,
            a.openai_rpm,
            "requests/minute",
            raise_by,
            True,
            f"{calls}; a background response's polls (responses.retrieve) are not counted",
        ),
        component(
            t,
            f"OpenAI tokens per minute ({model}, {tier} tier)",
            "vendor limit",
            t.rates.ai_calls * reserved * 60,
            a.openai_tpm,
            f"tokens/minute ({reserved:,} a request: {a.ai_input_tokens:,} in and OPENAI_MAX_OUTPUT_TOKENS)",
            raise_by + "; or a lower OPENAI_MAX_OUTPUT_TOKENS",
            True,
            f"{calls}; counted as used ({a.ai_input_tokens + a.ai_output_tokens:,} a request) "
            f"it saturates {reserved / (a.ai_input_tokens + a.ai_output_tokens):.1f}x later",
        ),
    ]
