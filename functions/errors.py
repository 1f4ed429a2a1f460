"""Errors raised by the task functions.

The state machine's Retry and Catch match these class names (Lambda reports the
exception's class name as the error type), so they read as plain English in the run
history: a *Retryable* error is retried with backoff, a *Permanent* one is not.
"""


class ProcessingLockHeld(Exception):
    """Another run holds the conversation's processing lock and its lease has not expired."""


class ProcessingLockLost(Exception):
    """This run's lease expired and another run took the processing lock."""


class TransactionConflict(Exception):
    """A DynamoDB transaction met a concurrent write to one of its items; retrying it is safe."""


class ConversationNotFound(Exception):
    """The conversation named by the execution input does not exist."""


class AIRetryableError(Exception):
    """OpenAI is rate limiting, overloaded, unreachable or busy with the conversation."""


class AIPermanentError(Exception):
    """OpenAI rejected the request; retrying the same request cannot succeed. `code`:
    OpenAI's error code, if it gave one."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class NewerFragments(Exception):
    """The reply was discarded (`on_newer: merge`): fragments came after the batch was
    merged. Not a failure: the run catches it, merges the batch again with them and asks
    again ("Answer Again With Newer Fragments"), at most `max_regenerations` times."""


class ToolCallsRequested(Exception):
    """The model's response asks for tool calls before it answers. Not a failure: the run
    catches it and makes them ("Call Tools"), then Generate Reply asks again with their
    outputs. Its message counts the calls; their arguments stay out of the run's history."""


class ToolCallRetryableError(Exception):
    """A tool endpoint could not be reached (or a read-only call got no answer): Call Tools'
    Retry tries again; calls already made are not made again."""


class AICredentialsRefused(AIPermanentError):
    """OpenAI refused the key (401 `invalid_api_key`: revoked, rotated, another project's),
    also once the key was read again past its cache. The configuration is at fault, not the
    user: the batch is kept pending, no attempt is counted, and the run ends FAILED
    (alarmed: AICredentialsRefused) until the secret holds a key OpenAI accepts."""


class AIModelUnavailable(Exception):
    """OpenAI does not serve the model asked for (404 `model_not_found`: shut down,
    misspelt, or not open to the key's project), nor the fallback model if one is set. The
    configuration is at fault, not the user: the batch is kept pending, no attempt is
    counted against it, and the run ends FAILED (alarmed) until the model is changed."""


class TwilioRetryableError(Exception):
    """Twilio is rate limiting, failing or unreachable. `refused`: Twilio answered with a
    4xx (429, 63018), so a create created nothing; a 5xx, a timeout or a broken connection
    leaves it in doubt."""

    def __init__(self, message: str, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


class TwilioPermanentError(Exception):
    """Twilio refused the message (unsubscribed, blocked, bad number, window closed...)."""

    refused = True  # answered 4xx: a create created nothing

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class TwilioCredentialsRefused(TwilioPermanentError):
    """Twilio refused the tenant's credentials (HTTP 401, code 20003: the token was rotated
    or revoked), also once the secret was read again. The configuration is at fault, not
    the user: the batch is kept pending, no attempt is counted, and the run ends FAILED
    (alarmed: TwilioCredentialsRefused) until the tenant's secret holds the token Twilio
    accepts (python -m infra.tenants add)."""


class SecretOutsideTenant(Exception):
    """A conversation names a secret outside its tenant's prefix (or has no tenant): the
    secret is not read. An operator's error, not the AI's nor Twilio's: the batch is kept
    and counted as a failed attempt, then dead-lettered (alarmed) until it is fixed."""


# A receipt `failed` with 30036: Twilio's queue kept the message past its ValidityPeriod and
# never sent it (https://www.twilio.com/docs/api/errors/30036; functions/delivery/twilio_messages.py,
# functions/delivery/send_once.py).
VALIDITY_PERIOD_EXPIRED = 30036
