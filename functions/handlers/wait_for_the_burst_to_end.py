"""Wait For The Burst To End."""

from functions.handlers.task import task
from functions.states.wait_for_the_burst_to_end import wait_for_the_burst_to_end

handler = task("Wait For The Burst To End", wait_for_the_burst_to_end)
