"""Merge Staged Messages."""

from functions.handlers.task_handler import task_handler
from functions.states.merge_staged_messages import merge_staged_messages

handler = task_handler("Merge Staged Messages", merge_staged_messages)
