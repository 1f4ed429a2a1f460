"""Call Tools."""

from functions.handlers.task_handler import task_handler
from functions.states.call_tools import call_tools

handler = task_handler("Call Tools", call_tools)
