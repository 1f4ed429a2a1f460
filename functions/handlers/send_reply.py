"""Send Reply."""

from functions.handlers.task_handler import task_handler
from functions.states.send_reply import send_reply

handler = task_handler("Send Reply", send_reply)
