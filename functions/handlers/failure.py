"""Record Failed Batch."""

from functions.contract import FailedInput
from functions.handlers.task import task
from functions.logic import failure

record_failed_batch = task(FailedInput, failure.record_failed_batch)
