"""An operator's shell for the local stack: the commands (`python -m infra.runs`,
`infra.smoke`, ...) run in a process of their own with the local stack's AWS endpoint, and
none of the functions' settings that the tests' own process holds."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[2]
KEPT = ("PATH", "HOME", "LANG", "PYTHONPYCACHEPREFIX", "SYSTEMROOT")


def operator_shell(stack: Any, **names: str) -> dict[str, str]:
    """The environment: the stack's AWS endpoint, and `names`."""
    kept = {k: v for k, v in os.environ.items() if k in KEPT}
    return {**kept, "AWS_ENDPOINT_URL": stack.aws.url, **names}
