"""Call Tools."""

from functions.handlers.task import task
from functions.states.call_tools import call_tools

handler = task("Call Tools", call_tools)
