"""Acquire Processing Lock."""

from functions.handlers.task_handler import task_handler
from functions.states.acquire_processing_lock import acquire_processing_lock

handler = task_handler("Acquire Processing Lock", acquire_processing_lock)
