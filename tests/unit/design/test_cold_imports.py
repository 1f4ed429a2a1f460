"""What each function loads at cold start: the heavy SDKs only where they are used. (The
time each import takes is measured by `make bench`, not here; which modules load does not
depend on the machine.)"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from functions.registry import ALL_FUNCTIONS
from functions.storage.tables import ALL_TABLES

ROOT = Path(__file__).resolve().parents[3]
# The settings the stack gives every function: its tables and its event bus.
DEPLOYED_SETTINGS = {**{t.env_var: t.logical_id for t in ALL_TABLES}, "EVENT_BUS_NAME": "bus"}
HEAVY = ("openai", "pydantic", "twilio.rest", "requests", "aiohttp")
MODULES = sorted({f.handler.rpartition(".")[0] for f in ALL_FUNCTIONS})


# After the import: the modules loaded (a None in sys.modules is an import blocked, not a
# module loaded), and our models whose validators are built (the others wait for their
# first use: `defer_build`).
_REPORT = """
import json, sys
from pydantic import BaseModel
def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)
ours = [c for c in subclasses(BaseModel) if c.__module__.startswith("functions.")]
built = {c.__qualname__ for c in ours if c.__pydantic_complete__}
loaded = [n for n, m in sys.modules.items() if m is not None]
print(json.dumps({"modules": loaded, "built": sorted(built)}))
"""


def _loaded(module: str) -> tuple[set[str], set[str]]:
    """The heavy packages importing `module` loads in a fresh interpreter, and the models
    it builds."""
    script = f"import {module}\n{_REPORT}"
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={"PATH": "", "AWS_DEFAULT_REGION": "us-east-1", **DEPLOYED_SETTINGS, **_bytecode_cache()},
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(result.stdout)
    names = report["modules"]
    return {h for h in HEAVY if any(n == h or n.startswith(h + ".") for n in names)}, set(report["built"])


def _bytecode_cache() -> dict[str, str]:
    """The tests' bytecode cache (the Makefile's PYTHONPYCACHEPREFIX), if any: what each
    interpreter loads does not depend on it, and without it each compiled everything again."""
    prefix = os.environ.get("PYTHONPYCACHEPREFIX")
    return {"PYTHONPYCACHEPREFIX": prefix} if prefix else {}


@pytest.fixture(scope="module")
def imported() -> dict[str, tuple[set[str], set[str]]]:
    return {module: _loaded(module) for module in MODULES}


@pytest.fixture(scope="module")
def loaded(imported) -> dict[str, set[str]]:
    return {module: heavy for module, (heavy, _) in imported.items()}


def test_only_generate_reply_loads_the_openai_sdk(loaded):
    for module, heavy in loaded.items():
        assert ("openai" in heavy) == (module == "functions.handlers.generate_reply"), module


def test_every_function_loads_pydantic_and_builds_only_the_settings_model_at_import(imported):
    """Every model is pydantic's (docs/adr/0059-models-are-pydantic-models-as-the-design-card.md),
    so every function pays for importing pydantic; none pays at cold start for building the
    validators of models it has not used yet (`defer_build`), except the settings, which are
    read at import to fail fast."""
    for module, (heavy, built) in imported.items():
        assert "pydantic" in heavy, module
        assert built == {"Settings"}, module


def test_twilios_rest_client_loads_only_where_every_run_sends_through_it(loaded):
    """Send Reply sends every reply, and a status callback may send the WhatsApp
    template. Record Failed Batch sends a fallback only for a batch the AI could not
    answer, and loads the client then."""
    senders = {"functions.handlers.send_reply", "functions.handlers.status_callback"}
    for module, heavy in loaded.items():
        assert ("twilio.rest" in heavy) == (module in senders), module


def test_no_function_loads_aiohttp_the_openai_sdks_asynchronous_transport(loaded):
    """Generate Reply uses the SDK's synchronous client; aiohttp is installed (Twilio's SDK
    requires it) but never loaded (functions/handlers/__init__.py)."""
    assert "openai" in loaded["functions.handlers.generate_reply"]
    for module, heavy in loaded.items():
        assert "aiohttp" not in heavy, module
