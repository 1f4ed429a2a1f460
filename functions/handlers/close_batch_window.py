"""Close Batch Window."""

from functions.handlers.task import task
from functions.states.close_batch_window import close_batch_window

handler = task("Close Batch Window", close_batch_window)
