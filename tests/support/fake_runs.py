"""A fake of the Step Functions client as functions/batching/stepfunctions.py offers
it: the runs started (by name, with their input), the task tokens woken, and each run's
status as a test sets it."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from functions.batching import stepfunctions


@dataclass
class FakeRuns:
    started: dict[str, str] = field(default_factory=dict)  # name → input
    starts: int = 0
    woken: list[str] = field(default_factory=list)
    statuses: dict[str, str] = field(default_factory=dict)  # name → RUNNING, SUCCEEDED...

    def start(self, name: str, run_input: str, already_open: bool = False) -> None:
        self.starts += 1
        self.started.setdefault(name, run_input)
        self.statuses.setdefault(name, "RUNNING")

    def wake(self, task_token: str) -> bool:
        self.woken.append(task_token)
        return True

    def status(self, execution_name: str) -> str | None:
        return self.statuses.get(execution_name)


def install_runs(monkeypatch: pytest.MonkeyPatch) -> FakeRuns:
    runs = FakeRuns()
    monkeypatch.setattr(stepfunctions, "start", runs.start)
    monkeypatch.setattr(stepfunctions, "wake", runs.wake)
    monkeypatch.setattr(stepfunctions, "status", runs.status)
    return runs
