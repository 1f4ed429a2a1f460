"""Merge Staged Messages."""

from functions.handlers.task import task
from functions.states.merge_staged_messages import merge_staged_messages

handler = task("Merge Staged Messages", merge_staged_messages)
