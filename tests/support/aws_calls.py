"""Counting the AWS API calls a piece of code makes, as botocore sends them."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import botocore.client


class AwsCalls:
    """Counts the AWS API calls the current thread makes while `counting()` is open
    (other threads, such as the emulator running state machines, are not counted).
    Install it with `install(monkeypatch)`; names are `service:Operation`."""

    def __init__(self) -> None:
        self._local = threading.local()
        self.calls: Counter[str] = Counter()

    def install(self, monkeypatch: Any) -> AwsCalls:
        original: Callable[..., Any] = botocore.client.BaseClient._make_api_call
        counter = self

        def counted(client: Any, operation: str, params: dict[str, Any]) -> Any:
            if getattr(counter._local, "on", False):
                counter.calls[f"{client.meta.service_model.service_name}:{operation}"] += 1
            return original(client, operation, params)

        monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", counted)
        return self

    @contextmanager
    def counting(self) -> Iterator[Counter[str]]:
        self.calls = Counter()
        self._local.on = True
        try:
            yield self.calls
        finally:
            self._local.on = False

    def of(self, service: str) -> int:
        return sum(n for name, n in self.calls.items() if name.startswith(service + ":"))
