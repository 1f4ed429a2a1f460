"""Send Reply."""

from functions.contract import SendInput
from functions.handlers.task import task
from functions.logic import sending

send_reply = task(SendInput, sending.send_reply)
