"""What bounds spend in the synthesized template: a web ACL with a per-IP rate rule on
the stage Twilio calls, and the alarms on the tenants' and everyone's AI call ceilings
(one alarm whose query is grouped by Tenant watches a tenant registered after the deploy)."""

from __future__ import annotations

from typing import Any

import pytest

from infra.names import NAMESPACE, SERVICE
from infra.stack_settings import StackSettings
from tests.infra.test_stack import logical_id_of, resources
from tests.support.bench import prices

pytestmark = pytest.mark.infra


def test_a_per_ip_rate_rule_guards_the_stage_twilio_calls(synthesized):
    """Unsigned requests only: tests/infra/test_edge.py evaluates its scope-down statement."""
    stack_json = synthesized[1]
    (acl_id,) = resources(stack_json, "AWS::WAFv2::WebACL")
    acl = stack_json["Resources"][acl_id]["Properties"]
    (rule,) = acl["Rules"]
    assert len(acl["Rules"]) == prices.WAF_RULES  # what the benchmark's monthly WAF cost counts
    assert acl["Scope"] == "REGIONAL" and acl["DefaultAction"] == {"Allow": {}}
    assert {
        k: v for k, v in rule["Statement"]["RateBasedStatement"].items() if k != "ScopeDownStatement"
    } == {
        "AggregateKeyType": "IP",
        "Limit": StackSettings(code_directory=None, dependencies_directory=None).api_rate_limit_per_ip,  # type: ignore[arg-type]
        "EvaluationWindowSec": 300,
    }
    assert rule["Action"] == {"Block": {"CustomResponse": {"ResponseCode": 429}}}
    (association,) = resources(stack_json, "AWS::WAFv2::WebACLAssociation").values()
    stage = logical_id_of(stack_json, "AWS::ApiGateway::Stage", "/Webhook/Api/")
    assert association["Properties"]["WebACLArn"] == {"Fn::GetAtt": [acl_id, "Arn"]}
    assert stage in str(association["Properties"]["ResourceArn"])


def _alarm(stack_json: dict[str, Any], name: str) -> dict[str, Any]:
    return stack_json["Resources"][
        logical_id_of(stack_json, "AWS::CloudWatch::Alarm", f"/Monitoring/{name}/")
    ]["Properties"]


def test_a_tenant_at_its_ceiling_is_alarmed_by_a_query_grouped_by_tenant(synthesized):
    properties = _alarm(synthesized[1], "TenantCeilingReached")
    (query,) = properties["Metrics"]
    assert query["Expression"] == (
        f'SELECT SUM("TenantCeilingReached") FROM SCHEMA("{NAMESPACE}", service, Tenant) '
        f"WHERE service = '{SERVICE}' GROUP BY Tenant"
    )
    assert (query["Period"], properties["Threshold"]) == (300, 1)
    assert properties["TreatMissingData"] == "notBreaching"


@pytest.mark.parametrize("metric", ["AICallsCeilingReached", "TokenCeilingReached"])
def test_everyones_ceiling_is_alarmed_on_the_metric_generate_reply_emits(synthesized, metric):
    properties = _alarm(synthesized[1], metric)
    assert (properties["Namespace"], properties["MetricName"]) == (NAMESPACE, metric)
    assert properties["Dimensions"] == [{"Name": "service", "Value": SERVICE}]
