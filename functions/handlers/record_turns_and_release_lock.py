"""Record Turns And Release Lock."""

from functions.handlers.task_handler import task_handler
from functions.states.record_turns_and_release_lock import record_turns_and_release_lock

handler = task_handler("Record Turns And Release Lock", record_turns_and_release_lock)
