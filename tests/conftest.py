"""Fixtures shared by the emulator and end-to-end tests. The local stack and its harness
live in tests/support/local_stack.py and are imported only when a test uses them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from functions.config import get_settings

if TYPE_CHECKING:
    from infra.local.stack import LocalStack
    from tests.support.local_stack import Harness


@pytest.fixture(scope="session")
def stack() -> Iterator[LocalStack]:
    from tests.support.local_stack import local_stack

    with local_stack() as running:
        yield running


@pytest.fixture
def harness(stack: LocalStack) -> Iterator[Harness]:
    from tests.support.local_stack import Harness

    stack.openai.reset()
    stack.twilio.reset()
    yield Harness(stack)
    stack.openai.reset()
    stack.twilio.reset()


@pytest.fixture
def configure(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Change the functions' settings for one test (the handlers run in this process)."""

    def setter(**values: str) -> None:
        for name, value in values.items():
            monkeypatch.setenv(name, value)
        get_settings.cache_clear()

    yield setter
    monkeypatch.undo()
    get_settings.cache_clear()
