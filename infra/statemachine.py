"""The state machine definition: one ASL file, rendered with the same substitution map
in the local stack and (as `definition_substitutions`) by CDK."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

DEFINITION_FILE = Path(__file__).resolve().parent.parent / "statemachines" / "batch_window.asl.json"

# Not string.Template: it would trip over `$.path` and `$$.Execution.Id`.
_PLACEHOLDER = re.compile(r"\$\{(\w+)\}")


def placeholders(text: str | None = None) -> set[str]:
    return set(_PLACEHOLDER.findall(text if text is not None else DEFINITION_FILE.read_text()))


def render(substitutions: dict[str, str]) -> dict[str, Any]:
    """The definition with every `${Name}` replaced; a missing name is an error."""
    text = DEFINITION_FILE.read_text()
    missing = placeholders(text) - substitutions.keys()
    if missing:
        raise KeyError(f"no value for placeholders {sorted(missing)}")
    rendered: dict[str, Any] = json.loads(_PLACEHOLDER.sub(lambda m: substitutions[m.group(1)], text))
    return rendered


def definition_substitutions(table_names: dict[str, str], function_arns: dict[str, str]) -> dict[str, str]:
    """The `${Placeholder}` map of the state machine: table names and task function ARNs,
    keyed by logical id, and the DynamoDB expressions of its direct integrations. CDK
    passes the same map as `definition_substitutions`; the local stack renders with it."""
    from functions.registry import TASKS
    from functions.storage import expressions
    from functions.storage.tables import ALL_TABLES, PENDING_INDEX

    values = {t.placeholder: table_names[t.logical_id] for t in ALL_TABLES}
    values.update(expressions.SUBSTITUTIONS)
    values["PendingIndexName"] = PENDING_INDEX
    values.update({f.placeholder: function_arns[f.logical_id] for f in TASKS if f.placeholder})
    return values
