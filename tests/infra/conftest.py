"""The synthesized stack, once per test run (infra.iam evaluates the same template)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def synthesized() -> tuple[Any, dict[str, Any], Path]:
    """(the stack, its template as JSON, its cdk.out folder)."""
    from infra.iam import synthesize_stack

    return synthesize_stack()
