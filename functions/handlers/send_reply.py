"""Send Reply."""

from functions.handlers.task import task
from functions.states.send_reply import send_reply

handler = task("Send Reply", send_reply)
