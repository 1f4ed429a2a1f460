"""Record Failed Batch."""

from functions.handlers.task import task
from functions.states.record_failed_batch import record_failed_batch

handler = task("Record Failed Batch", record_failed_batch)
