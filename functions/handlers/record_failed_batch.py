"""Record Failed Batch."""

from functions.handlers.task_handler import task_handler
from functions.states.record_failed_batch import record_failed_batch

handler = task_handler("Record Failed Batch", record_failed_batch)
