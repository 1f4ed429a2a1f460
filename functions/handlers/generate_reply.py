"""Generate Reply."""

from functions.handlers.task_handler import task_handler
from functions.states.generate_reply import generate_reply

handler = task_handler("Generate Reply", generate_reply)
