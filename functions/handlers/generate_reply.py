"""Generate Reply."""

from functions.handlers.task import task
from functions.states.generate_reply import generate_reply

handler = task("Generate Reply", generate_reply)
