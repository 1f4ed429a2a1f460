"""The calls a test run recorded, as one recording: each pytest-xdist worker runs its own
local stack and records its own calls; the run's controller merges them, writes the one
file `python -m infra.iam` and `make preflight` read (CALLS_FILE), and evaluates that."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from infra.local.aws_calls import AwsCall, Recorder, Recording, naming_settings


def recorded(recorder: Recorder) -> Recording:
    """What `recorder` holds, with the settings that named its resources in this process."""
    return Recording(naming_settings(dict(os.environ)), recorder.calls(), recorder.settings_read())


def as_data(recording: Recording) -> dict[str, Any]:
    """The recording as JSON-ready data (the form of CALLS_FILE)."""
    return {
        "environment": recording.environment,
        "calls": [asdict(c) for c in recording.calls],
        "settings_read": [list(pair) for pair in recording.settings_read],
    }


def from_data(data: dict[str, Any]) -> Recording:
    read = [(function, setting) for function, setting in data.get("settings_read", [])]
    return Recording(dict(data["environment"]), [AwsCall.from_data(c) for c in data["calls"]], read)


def merge(recordings: Iterable[Recording]) -> Recording:
    """Every call of every recording, each distinct one once. The recordings must agree on
    the settings that named the resources: the same name meaning two resources would make
    the evaluation judge the wrong one."""
    environment: dict[str, str] = {}
    calls: set[AwsCall] = set()
    read: set[tuple[str, str]] = set()
    for recording in recordings:
        read.update(recording.settings_read)
        for name, value in recording.environment.items():
            if environment.setdefault(name, value) != value:
                raise ValueError(f"the recordings disagree on {name}: {environment[name]!r} and {value!r}")
        calls.update(recording.calls)
    ordered = sorted(calls, key=AwsCall.sort_key)
    return Recording(environment, ordered, sorted(read))


def write(recording: Recording, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(as_data(recording), indent=1))
