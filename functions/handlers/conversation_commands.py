"""A helpdesk's commands, delivered by a rule on the event bus (conversation.pause,
conversation.resume, conversation.reply): functions/entry_points/conversation_commands.py."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.entry_points.conversation_commands import run_command
from functions.observability import lambda_entry_point
from functions.registry import CONVERSATION_COMMANDS

CONVERSATION_COMMANDS.read_settings()  # fail at cold start if the stack left a setting out


@lambda_entry_point
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return run_command(event)
