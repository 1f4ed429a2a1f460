"""Close Batch Window."""

from functions.handlers.task_handler import task_handler
from functions.states.close_batch_window import close_batch_window

handler = task_handler("Close Batch Window", close_batch_window)
