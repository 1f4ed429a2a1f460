"""Generate Reply (the only function that imports the OpenAI SDK)."""

from functions.contract import GenerateInput
from functions.handlers.task import task
from functions.logic import generating

generate_reply = task(GenerateInput, generating.generate_reply)
