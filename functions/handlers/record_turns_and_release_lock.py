"""Record Turns And Release Lock."""

from functions.handlers.task import task
from functions.states.record_turns_and_release_lock import record_turns_and_release_lock

handler = task("Record Turns And Release Lock", record_turns_and_release_lock)
