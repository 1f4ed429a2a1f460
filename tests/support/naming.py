"""The naming rule the functions follow, as the tests check it (functions/registry.py)."""

from __future__ import annotations

from functions.registry import FunctionDefinition


def logic_module(function: FunctionDefinition) -> str:
    """A function's logic module: one per state, or per other entry point."""
    return f"functions.{'states' if function.state else 'entry_points'}.{function.module}"
