"""Local stand-ins for OpenAI and Twilio, reached through the real SDKs over HTTP, that
behave as the vendors document, awkward parts included. See base.py for the control API
(faults, chaos, recorded calls), openai.py and twilio.py for what each reproduces."""

from infra.local.standins.base import StandIn
from infra.local.standins.openai import OpenAIStandIn
from infra.local.standins.twilio import TwilioStandIn

__all__ = ["OpenAIStandIn", "StandIn", "TwilioStandIn"]
