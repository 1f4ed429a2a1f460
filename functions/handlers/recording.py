"""Record Turns And Release Lock, Close Batch Window."""

from functions.contract import CloseInput, RecordInput
from functions.handlers.task import task
from functions.logic import recording

record_turns = task(RecordInput, recording.record_turns)
close_batch_window = task(CloseInput, recording.close_batch_window)
