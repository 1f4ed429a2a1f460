"""Wait For The Burst To End, Acquire Processing Lock."""

from functions.contract import AcquireInput, ParkInput
from functions.handlers.task import task
from functions.logic import waiting

park_until_due = task(ParkInput, waiting.park_until_due)
acquire_processing_lock = task(AcquireInput, waiting.acquire_processing_lock)
