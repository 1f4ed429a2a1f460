"""Unit tests need no emulator. The settings the stack would give the functions are set
before the test modules import the handlers (which read them at import, as at a cold
start); tests/unit/design/test_isolation.py checks that no emulator is loaded."""

from __future__ import annotations

import os

from functions.stack_names import STACK_NAME, event_bus_name
from functions.storage.tables import ALL_TABLES

for _table in ALL_TABLES:
    os.environ.setdefault(_table.env_var, _table.logical_id)
os.environ.setdefault("EVENT_BUS_NAME", event_bus_name(STACK_NAME))
