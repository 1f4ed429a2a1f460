"""Scheduled entry point of the reconciler."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.entry_points.reconciler import reconcile
from functions.observability import lambda_entry_point
from functions.registry import RECONCILER

RECONCILER.read_settings()  # fail at cold start if the stack left a setting out


@lambda_entry_point
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return reconcile()
