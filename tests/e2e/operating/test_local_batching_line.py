"""`make local` says how it batches, in the mode it batches in: the fixed window's line
stays "Batch window: <W>s. Ctrl-C to stop." (tests/e2e/operating/test_local_service.py keeps it), and
in quiet and adaptive mode the same line names the quiet period and the cap instead of a
window the functions do not use."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).parents[3]
LINE = 7  # after the webhooks, the endpoints and the state machine


def _batching_line_of_make_local(settings: dict[str, str]) -> str:
    """The line `python -m infra.local` prints about batching, with `settings` in its
    environment; the service is stopped as Ctrl-C would."""
    environment = {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("WEBHOOK_", "TWILIO_", "OPENAI_", "AWS_", "BATCH_", "QUIET_", "TYPING_"))
            and k != "MAX_WAIT_SECONDS"
        },
        "AWS_PORT": "0",
        "GATEWAY_PORT": "0",
        "CONSOLE_PORT": "0",
        **settings,
    }
    service = subprocess.Popen(
        [sys.executable, "-m", "infra.local"], cwd=ROOT, env=environment, stdout=subprocess.PIPE, text=True
    )
    try:
        lines = [service.stdout.readline().rstrip("\n") for _ in range(LINE)]  # type: ignore[union-attr]
    finally:
        service.send_signal(signal.SIGINT)
        service.communicate(timeout=20)
    assert lines[LINE - 2].startswith("State machine: "), lines
    return lines[LINE - 1]


@pytest.mark.parametrize(
    ("settings", "printed"),
    [
        (
            {
                "BATCH_MODE": "quiet",
                "QUIET_SECONDS": "3",
                "TYPING_GAP_SECONDS": "2",
                "TYPING_QUIET_SECONDS": "6",
            },
            "Batching: quiet 3s (6s after a gap under 2s), at most 60s. Ctrl-C to stop.",
        ),
        (
            {"BATCH_MODE": "adaptive", "QUIET_SECONDS": "2.5", "MAX_WAIT_SECONDS": "30"},
            "Batching: adaptive, quiet 2.5s to start (learned within 2.5s to 20s), at most 30s."
            " Ctrl-C to stop.",
        ),
    ],
    ids=["quiet", "adaptive"],
)
def test_make_local_names_the_batching_mode_it_runs(settings, printed):
    assert _batching_line_of_make_local({"BATCH_WINDOW_SECONDS": "10", **settings}) == printed
