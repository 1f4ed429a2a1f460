"""The edge refuses nothing of Twilio's signed traffic (invariant 11): read off the
synthesized template. Twilio never retries a 429 (https://www.twilio.com/docs/api/errors/11217),
so a throttle sized below real volume, or a WAF rule that counts Twilio's shared addresses,
loses messages. What it does refuse is alarmed, and the webhook's reserved concurrency, the
cost cap, is a deployment's choice.

The CDK is imported inside the tests that use it (tests/unit/design/test_isolation.py)."""

from __future__ import annotations

from typing import Any

import pytest

from functions.registry import WEBHOOK
from infra.names import NAMESPACE
from tests.infra.test_stack import logical_id_of, resources

pytestmark = pytest.mark.infra

# What a Twilio deployment should sustain: a thousand messages a second (issue 29), each
# with its status callbacks, through the one stage.
AT_LEAST_REQUESTS_PER_SECOND = 1_000


def _stage(stack_json: dict[str, Any]) -> dict[str, Any]:
    stage = logical_id_of(stack_json, "AWS::ApiGateway::Stage", "/Webhook/Api/")
    return stack_json["Resources"][stage]["Properties"]


def test_the_stages_throttle_lets_a_thousand_requests_a_second_through(synthesized):
    (throttled,) = [s for s in _stage(synthesized[1])["MethodSettings"] if "ThrottlingRateLimit" in s]
    assert (throttled["ResourcePath"], throttled["HttpMethod"]) == ("/*", "*")  # every method
    assert throttled["ThrottlingRateLimit"] >= AT_LEAST_REQUESTS_PER_SECOND
    assert throttled["ThrottlingBurstLimit"] >= AT_LEAST_REQUESTS_PER_SECOND


# --- the web ACL, evaluated --------------------------------------------------------------


def _matches(statement: dict[str, Any], headers: dict[str, str]) -> bool:
    """Whether a request with `headers` matches a WAF statement, as AWS WAF evaluates the
    statements used here; any other kind is assumed to match (so a rule this test cannot
    read is taken to block)."""
    if "NotStatement" in statement:
        return not _matches(statement["NotStatement"]["Statement"], headers)
    if "AndStatement" in statement:
        return all(_matches(s, headers) for s in statement["AndStatement"]["Statements"])
    if "OrStatement" in statement:
        return any(_matches(s, headers) for s in statement["OrStatement"]["Statements"])
    size = statement.get("SizeConstraintStatement")
    if size and "SingleHeader" in size["FieldToMatch"]:
        value = headers.get(size["FieldToMatch"]["SingleHeader"]["Name"].lower())
        if value is None:  # a request without the component does not match
            return False
        compare = {"GT": int.__gt__, "GE": int.__ge__, "EQ": int.__eq__, "LT": int.__lt__, "LE": int.__le__}
        return compare[size["ComparisonOperator"]](len(value.encode()), size["Size"])
    return True


def _counted_by(rule: dict[str, Any], headers: dict[str, str]) -> bool:
    """Whether the rule counts (and so may act on) a request with `headers`."""
    statement = rule["Statement"]
    rate = statement.get("RateBasedStatement")
    if rate is None:
        return _matches(statement, headers)
    return "ScopeDownStatement" not in rate or _matches(rate["ScopeDownStatement"], headers)


def _web_acl(stack_json: dict[str, Any]) -> dict[str, Any]:
    (acl,) = resources(stack_json, "AWS::WAFv2::WebACL").values()
    return acl["Properties"]


SIGNED = {
    "x-twilio-signature": "RSOYDt4T1cUTdK1PDd93/VVr8B8=",
    "content-type": "application/x-www-form-urlencoded",
}
UNSIGNED = {"content-type": "application/x-www-form-urlencoded"}


def test_no_rule_of_the_web_acl_blocks_a_request_that_carries_twilios_signature(synthesized):
    acl = _web_acl(synthesized[1])
    assert acl["DefaultAction"] == {"Allow": {}}
    blocking = [rule for rule in acl["Rules"] if "Count" not in rule["Action"]]
    assert blocking, "the web ACL still guards against unsigned floods"
    for rule in blocking:
        assert not _counted_by(rule, SIGNED), rule["Name"]
        assert _counted_by(rule, UNSIGNED), rule["Name"]
        assert _counted_by(rule, {**SIGNED, "x-twilio-signature": ""}), "an empty header is no signature"


def test_an_address_flooding_without_a_signature_is_still_refused_by_its_rate(synthesized):
    from infra.names import StackSettings

    (rule,) = _web_acl(synthesized[1])["Rules"]
    rate = rule["Statement"]["RateBasedStatement"]
    default = StackSettings(code_directory=None, dependencies_directory=None)  # type: ignore[arg-type]
    assert (rate["AggregateKeyType"], rate["EvaluationWindowSec"]) == ("IP", 300)
    assert rate["Limit"] == default.api_rate_limit_per_ip
    assert rule["Action"] == {"Block": {"CustomResponse": {"ResponseCode": 429}}}


# --- alarms ------------------------------------------------------------------------------


def _alarm(stack_json: dict[str, Any], name: str) -> dict[str, Any]:
    return stack_json["Resources"][
        logical_id_of(stack_json, "AWS::CloudWatch::Alarm", f"/Monitoring/{name}/")
    ]["Properties"]


def test_a_throttled_request_is_alarmed_from_the_stages_access_log(synthesized):
    stack_json = synthesized[1]
    alarm = _alarm(stack_json, "EdgeThrottled")
    (metric_filter,) = resources(stack_json, "AWS::Logs::MetricFilter").values()
    (transformation,) = metric_filter["Properties"]["MetricTransformations"]
    assert (alarm["Namespace"], alarm["MetricName"]) == (NAMESPACE, transformation["MetricName"])
    assert transformation["MetricNamespace"] == NAMESPACE and transformation["MetricValue"] == "1"
    assert (alarm["Statistic"], alarm["Threshold"]) == ("Sum", 1)  # one throttled webhook is a lost message
    # The filter reads the log the stage writes, by the field the stage writes to it.
    stage = _stage(stack_json)
    assert metric_filter["Properties"]["LogGroupName"] == {
        "Ref": logical_id_of(stack_json, "AWS::Logs::LogGroup", "/Webhook/AccessLogs/")
    }
    assert (
        stage["AccessLogSetting"]["DestinationArn"]["Fn::GetAtt"][0]
        == metric_filter["Properties"]["LogGroupName"]["Ref"]
    )
    assert '"responseType":"$context.error.responseType"' in stage["AccessLogSetting"]["Format"]
    assert metric_filter["Properties"]["FilterPattern"] == '{ $.responseType = "THROTTLED" }'


def test_an_address_blocked_by_the_web_acl_is_alarmed_on_its_rules_metric(synthesized):
    stack_json = synthesized[1]
    acl = _web_acl(stack_json)
    (rule,) = acl["Rules"]
    alarm = _alarm(stack_json, "UnsignedFloodBlocked")
    dimensions = {d["Name"]: d["Value"] for d in alarm["Dimensions"]}
    assert (alarm["Namespace"], alarm["MetricName"]) == ("AWS/WAFV2", "BlockedRequests")
    # The WebACL dimension is the web ACL's name, which is also its metric name.
    assert dimensions["WebACL"] == acl["Name"] == acl["VisibilityConfig"]["MetricName"]
    assert dimensions["Rule"] == rule["Name"] == rule["VisibilityConfig"]["MetricName"]
    assert dimensions["Region"] == {"Ref": "AWS::Region"}
    assert rule["VisibilityConfig"]["CloudWatchMetricsEnabled"] is True
    assert (alarm["Statistic"], alarm["Threshold"]) == ("Sum", 1)


# --- the cost cap ------------------------------------------------------------------------


def _reserved(stack_json: dict[str, Any]) -> dict[str, Any]:
    functions = resources(stack_json, "AWS::Lambda::Function")
    return {
        name: f["Properties"]["ReservedConcurrentExecutions"]
        for name, f in functions.items()
        if "ReservedConcurrentExecutions" in f["Properties"]
    }


def test_the_webhooks_reserved_concurrency_is_a_deployments_choice_and_none_by_default(synthesized, tmp_path):
    from aws_cdk.assertions import Template

    from infra.app import build_app

    assert _reserved(synthesized[1]) == {}
    (tmp_path / "code" / "functions").mkdir(parents=True)
    (tmp_path / "dependencies" / "python").mkdir(parents=True)
    _, stack = build_app(
        tmp_path / "code",
        tmp_path / "dependencies",
        outdir=str(tmp_path / "cdk.out"),
        context={"webhook_reserved_concurrency": "200"},
    )
    stack_json = Template.from_stack(stack).to_json()
    webhook = logical_id_of(stack_json, "AWS::Lambda::Function", f"/Functions/{WEBHOOK.logical_id}/")
    assert _reserved(stack_json) == {webhook: 200}
