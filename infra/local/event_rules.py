"""The service's event bus on the local stack, with the rules the deployed stack puts on it
(infra/constructs/conversation_commands.py): each function whose registry row names detail
types (functions/registry.py) is the target of a rule matching them.

moto keeps rules and matches events to them, but delivers to no Lambda target (its
`Rule.send_to_targets` raises NotImplementedError for one). `install`, in moto's process
(infra/local/moto_process.py), delivers an event to a Lambda target as EventBridge does,
asynchronously: PutEvents answers at once, and the event, as EventBridge gives it to a
function (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-events-structure.html:
`id`, `detail-type`, `source`, `account`, `time` in ISO 8601, `region`, `resources`,
`detail`), goes to the Lambda runtime of the main process, as moto's interpreter invokes a
task (infra/local/lambdas.py). An invocation that fails is not tried again here."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from typing import Any

from functions.registry import ALL_FUNCTIONS

REGION, ACCOUNT = "us-east-1", "123456789012"


def provision(events: Any, bus_name: str) -> None:
    """The bus, and a rule per function that takes events of some detail types."""
    events.create_event_bus(Name=bus_name)
    for function in ALL_FUNCTIONS:
        if not function.detail_types:
            continue
        events.put_rule(
            Name=function.logical_id,
            EventBusName=bus_name,
            EventPattern=json.dumps({"detail-type": list(function.detail_types)}),
        )
        target = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function.logical_id}"
        events.put_targets(
            Rule=function.logical_id, EventBusName=bus_name, Targets=[{"Id": "f", "Arn": target}]
        )


def install(runtime_url: str) -> None:
    """Deliver events to the Lambda targets of rules through the runtime at `runtime_url`."""
    import urllib3
    from moto.events.models import Rule

    pool = urllib3.PoolManager(maxsize=8, retries=False, timeout=urllib3.Timeout(connect=10))
    send_to_others = Rule.send_to_targets

    def send_to_targets(self: Any, event: dict[str, Any], transform_input: bool = True) -> None:
        functions = [t["Arn"] for t in self.targets if t["Arn"].startswith("arn:aws:lambda:")]
        if not functions:
            return send_to_others(self, event, transform_input)
        if not self.event_pattern.matches_event(event):
            return None
        for arn in functions:
            name = arn.rsplit(":", 1)[-1]
            url = f"{runtime_url.rstrip('/')}/2015-03-31/functions/{name}/invocations"
            body = json.dumps(as_delivered(event)).encode()
            threading.Thread(target=_invoke, args=(pool, url, body), daemon=True).start()
        return None

    Rule.send_to_targets = send_to_targets  # type: ignore[method-assign]


def as_delivered(event: dict[str, Any]) -> dict[str, Any]:
    """moto's event as EventBridge delivers it: its time in ISO 8601, without moto's own keys."""
    delivered = {k: v for k, v in event.items() if k != "ingestion-time"}
    if isinstance(delivered.get("time"), int | float):
        delivered["time"] = datetime.fromtimestamp(delivered["time"], UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return delivered


def _invoke(pool: Any, url: str, body: bytes) -> None:
    try:
        pool.request("POST", url, body=body, headers={"Content-Type": "application/json"})
    except Exception:  # the main process is gone or stopping: the event is lost, as on AWS after its retries
        return
