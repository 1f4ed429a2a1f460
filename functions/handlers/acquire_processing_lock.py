"""Acquire Processing Lock."""

from functions.handlers.task import task
from functions.states.acquire_processing_lock import acquire_processing_lock

handler = task("Acquire Processing Lock", acquire_processing_lock)
