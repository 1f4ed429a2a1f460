"""The kinds of value a setting holds, and how each is read from its text: the one
definition the functions' settings (functions/config.py), the CDK context (infra/stack_settings.py)
and the local stack (infra/local/stack.py) share."""

import json
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field

Name = Annotated[str, Field(min_length=1)]  # a resource's name: never empty
# How a burst's end is found (functions/batching/rules/debounce.py); a project's or a
# conversation's own rules take the same values.
BatchMode = Literal["fixed", "quiet", "adaptive"]

# How a yes-or-no setting may be written, in any case and with spaces around it: the one
# definition the functions' settings, the CDK context (infra/stack_settings.py) and the local stack
# (infra/local/stack.py) share.
_TRUE = frozenset({"1", "true", "t", "yes", "y", "on"})
_FALSE = frozenset({"0", "false", "f", "no", "n", "off"})


def read_flag(value: str | bool | int) -> bool:
    """A yes-or-no setting: True, False, or one of their usual spellings ("true", "1",
    "yes", "on", ... and their opposites). Anything else is a ValueError, never False."""
    if isinstance(value, bool):
        return value
    written = str(value).strip().lower()
    if written in _TRUE | _FALSE:
        return written in _TRUE
    raise ValueError(f"not a yes-or-no value: write one of {sorted(_TRUE)} or {sorted(_FALSE)}")


Flag = Annotated[bool, BeforeValidator(read_flag)]


def read_template_variables(value: str) -> str:
    """WHATSAPP_TEMPLATE_VARIABLES: empty, or a JSON object of strings (`{"1": "..."}`)."""
    if value.strip():
        parsed = json.loads(value)  # a JSONDecodeError is a ValueError
        if not isinstance(parsed, dict) or not all(isinstance(v, str) for v in parsed.values()):
            raise ValueError('a JSON object of strings, such as {"1": "our shop"}')
    return value.strip()
