"""Merge Staged Messages."""

from functions.contract import MergeInput
from functions.handlers.task import task
from functions.logic import merging

merge_staged_messages = task(MergeInput, merging.merge_staged_messages)
