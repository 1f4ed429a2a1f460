"""The settings of the functions: environment variables, read into small typed models, one
per feature or concern (functions/<feature>/settings.py), each read once per process and
failing fast. A function declares the models it reads (functions/registry.py `settings`);
the stack gives it exactly their variables, and the tests check that it reads no other
(docs/adr/0150-each-function-declares-the-settings-it-reads.md). A pydantic model, like
every model of the service (docs/adr/0059-models-are-pydantic-models-as-the-design-card.md).

Each field is the environment variable of its name in capitals (`turns_table`: TURNS_TABLE),
described once (`Field(description=...)`: docs/configuration.md is generated from them by
`python -m infra.configuration`)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ErrorDetails

from functions.setting_values import (  # noqa: F401 (the kinds of value, for the models)
    BatchMode,
    Flag,
    Name,
    read_flag,
    read_template_variables,
)


class SettingsModel(BaseModel):
    """Settings of one feature or concern. Numbers are read from their text ("20" is 20); a
    variable the model does not know (PATH, AWS_REGION, another model's) is ignored."""

    model_config = ConfigDict(frozen=True, alias_generator=str.upper, extra="ignore", defer_build=True)
    # The docs page (under docs/, with its anchor) that says what the descriptions leave out.
    docs: ClassVar[str] = ""

    @classmethod
    def get(cls) -> Self:
        """This model's settings, read from the environment once per process (a SettingsError
        names every variable amiss). `forget_settings()` reads them again."""
        return _read_once(cls)  # type: ignore[return-value]

    @classmethod
    def read(cls, environ: Mapping[str, Any]) -> Self:
        """This model's settings in `environ`."""
        try:
            return cls.model_validate(dict(environ))
        except ValidationError as error:
            raise SettingsError(error.errors()) from None

    @classmethod
    def variables(cls) -> frozenset[str]:
        """The environment variables of its fields."""
        return frozenset(name.upper() for name in cls.model_fields)


@cache
def _read_once(model: type[SettingsModel]) -> SettingsModel:
    return model.read(os.environ)


def forget_settings() -> None:
    """Read every model from the environment again at its next `get` (the environment changed:
    the local stack's start, a test's settings, an operator's command)."""
    _read_once.cache_clear()


def read_settings(environ: Mapping[str, Any], models: Iterable[type[SettingsModel]]) -> list[SettingsModel]:
    """Each of `models` read from `environ`, in order: one SettingsError names every variable
    amiss, in all of them."""
    read, errors = [], []
    for model in models:
        try:
            read.append(model.read(environ))
        except SettingsError as error:
            errors.extend(error.errors)
    if errors:
        raise SettingsError(errors) from None
    return read


class SettingsError(ValueError):
    """Settings amiss, named by their environment variables (pydantic's error locations);
    the values are not repeated, since a setting may hold a secret's name or a URL."""

    def __init__(self, errors: list[ErrorDetails]) -> None:
        # where and why only: pydantic's details also hold the value given
        self.errors = [ErrorDetails(type=e["type"], loc=e["loc"], msg=e["msg"], input=None) for e in errors]
        self.names = tuple(dict.fromkeys(str(e["loc"][0]) for e in errors if e["loc"]))
        reasons = "; ".join(f"{e['loc'][0]}: {e['msg']}" if e["loc"] else e["msg"] for e in errors)
        super().__init__(f"settings amiss: {reasons}")
