"""Wait For The Burst To End."""

from functions.handlers.task_handler import task_handler
from functions.states.wait_for_the_burst_to_end import wait_for_the_burst_to_end

handler = task_handler("Wait For The Burst To End", wait_for_the_burst_to_end)
