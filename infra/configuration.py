"""docs/configuration.md, written from the settings models (each field's description, default
and bounds; the functions that declare each model, from functions/registry.py) and from the
stack's own options (infra/stack_settings.py): `make docs`, or `python -m infra.configuration`
(`--check`: exit 1 when the page is out of date, as tests/unit/design/test_configuration_doc.py does)."""

from __future__ import annotations

import argparse
import sys
import typing
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

from annotated_types import Ge, Gt, Le, Lt, MinLen
from pydantic.fields import FieldInfo

from functions.config import SettingsModel
from functions.registry import ALL_FUNCTIONS, ALL_SETTINGS
from infra.deployment_settings import LOCAL_ONLY, SET_BY_STACK
from infra.stack_settings import CAMEL_CASE, NOT_GIVEN, StackSettings

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "configuration.md"
COMMAND = "make docs"
LONGEST_DEFAULT = 40  # characters of a text default shown; the rest is in the model
# Defaults the deployed stack replaces with its own values (infra/stack.py), though a file may give them.
STACK_DEFAULTS = {"WEBHOOK_BASE_URL": "the API's URL, set by the stack"}

PREAMBLE = f"""# Configuration

<!-- Written by `{COMMAND}` (python -m infra.configuration) from the settings models: edit a
field's description in functions/<feature>/settings.py, or a stack option's in
infra/stack_settings.py, then run `{COMMAND}`; a test fails while this page is out of date. -->

Each setting of the functions is an environment variable, a field of one small model in its
feature (`functions/<feature>/settings.py`). A function's row in `functions/registry.py`
declares the models it reads, and the stack gives it their settings and no other (the
"Functions" column). Locally, `make local` reads them from its environment
([local-stack.md](local-stack.md)); a deployment gives them in its settings file, `make deploy
SETTINGS=FILE` (`NAME=value` lines, validated at synth: a value amiss stops it, naming the
variable; [deploying.md](deploying.md#a-deployments-settings)), or as CDK context, by its name in
lower case, which wins over the file. "Set by the stack": the stack's own names, which a
settings file may not give (the local stack's in parentheses); "local only": the local stack's
alone. What each short description leaves out is on the page its model names.
"""


def render() -> str:
    """The whole page."""
    parts = [PREAMBLE, "## The functions' settings\n"]
    for model in ALL_SETTINGS:
        parts.append(_model_section(model))
    parts.append(_stack_section())
    return "\n".join(parts)


def _model_section(model: type[SettingsModel]) -> str:
    readers = [f.logical_id for f in ALL_FUNCTIONS if model in f.settings]
    given = "every function" if len(readers) == len(ALL_FUNCTIONS) else ", ".join(readers)
    summary = " ".join((model.__doc__ or "").split()).split(". ")[0].rstrip(".")
    source = model.__module__.replace(".", "/") + ".py"
    page = model.docs[: model.docs.index("#")] if "#" in model.docs else model.docs
    more = f"; more in [{page}]({model.docs})" if model.docs else ""
    lines = [
        f"### `{model.__name__}`",
        "",
        f"{summary}. In `{source}`{more}.",
        "",
        "| Variable | Default | Bounds | Description | Functions |",
        "|---|---|---|---|---|",
    ]
    for name, field in model.model_fields.items():
        variable = name.upper()
        cells = [f"`{variable}`", _default(variable, field), _bounds(field), _cell(field.description), given]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _default(variable: str, field: FieldInfo) -> str:
    if variable in SET_BY_STACK:
        local = "" if field.is_required() or field.default in ("", None) else f" ({_shown(field.default)})"
        return f"set by the stack{local}"
    shown = STACK_DEFAULTS.get(variable) or ("required" if field.is_required() else _shown(field.default))
    return f"{shown}, local only" if variable in LOCAL_ONLY else shown


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if value == "":
        return "empty"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value)
    if len(text) > LONGEST_DEFAULT:
        text = text[:LONGEST_DEFAULT].rstrip() + "…"
    return f"`{_cell(text)}`"


def _bounds(field: FieldInfo) -> str:
    choices = (
        typing.get_args(field.annotation) if typing.get_origin(field.annotation) is typing.Literal else ()
    )
    if choices:
        return ", ".join(f"`{c}`" if c else "empty" for c in choices)
    if field.annotation is bool:
        return "yes or no"
    found = []
    for bound in field.metadata:
        if isinstance(bound, Ge):
            found.append(f"≥ {bound.ge:,}")
        elif isinstance(bound, Gt):
            found.append(f"> {bound.gt:,}")
        elif isinstance(bound, Le):
            found.append(f"≤ {bound.le:,}")
        elif isinstance(bound, Lt):
            found.append(f"< {bound.lt:,}")
        elif isinstance(bound, MinLen) and bound.min_length == 1:
            found.append("not empty")
    return ", ".join(found)


def _cell(text: str | None) -> str:
    """Text for a table cell: one line, its pipes escaped."""
    return " ".join((text or "").split()).replace("|", "\\|")


def _stack_section() -> str:
    lines = [
        "## The stack's own settings",
        "",
        "Options of the stack itself (`infra/stack_settings.py`), no function's: lines of the same",
        "settings file, or CDK context by the name in lower case.",
        "",
        "| Setting | Default | Description |",
        "|---|---|---|",
    ]
    for option in fields(StackSettings):
        if option.name in NOT_GIVEN:
            continue
        name = f"`{option.name.upper()}`"
        default = _shown(option.default) if option.default is not MISSING else "required"
        description = _cell(option.metadata.get("description"))
        if option.name in CAMEL_CASE:
            description += f" Context `{CAMEL_CASE[option.name]}` too."
        lines.append(f"| {name} | {default} | {description} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m infra.configuration", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/configuration.md is out of date")
    args = parser.parse_args(argv)
    page = render()
    if args.check:
        if PAGE.read_text() != page:
            print(f"{PAGE.relative_to(ROOT)} is out of date: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(page)
    print(f"Wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
