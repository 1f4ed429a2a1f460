"""The synthesized CloudFormation template as it would be once deployed: every intrinsic
function resolved (Ref, Fn::GetAtt, Fn::Join, Fn::Select, Fn::Split, Fn::Sub) to the
names and ARNs CloudFormation would give, in a made-up account and region, so that IAM
policies can be evaluated against concrete ARNs."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from infra.names import STACK_NAME

ACCOUNT = "123456789012"
REGION = "us-east-1"
PARTITION = "aws"
# Secrets Manager appends six random characters to a secret's name in its ARN.
SECRET_SUFFIX = "-AbCdEf"

PSEUDO = {
    "AWS::AccountId": ACCOUNT,
    "AWS::Region": REGION,
    "AWS::Partition": PARTITION,
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::NoValue": None,
}


def arn(service: str, resource: str, region: str = REGION) -> str:
    return f"arn:{PARTITION}:{service}:{region}:{ACCOUNT}:{resource}"


@dataclass
class Deployed:
    """A template, resolved on demand."""

    template: dict[str, Any]

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        return self.template["Resources"]  # type: ignore[no-any-return]

    def of_type(self, kind: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.resources.items() if v["Type"] == kind}

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, argument),) = value.items()
            if key == "Ref":
                return self.ref(argument)
            if key == "Fn::GetAtt":
                logical_id, attribute = argument if isinstance(argument, list) else argument.split(".", 1)
                return self.get_att(logical_id, attribute)
            if key == "Fn::Join":
                separator, parts = argument
                return separator.join(str(p) for p in self.resolve(parts))
            if key == "Fn::Select":
                index, items = self.resolve(argument)
                return items[int(index)]
            if key == "Fn::Split":
                separator, text = self.resolve(argument)
                return text.split(separator)
            if key == "Fn::Sub":
                return self._sub(argument)
            if key.startswith("Fn::"):
                raise ValueError(f"cannot resolve {key}")
        return {k: self.resolve(v) for k, v in value.items()}

    def _sub(self, argument: Any) -> str:
        text, variables = (argument, {}) if isinstance(argument, str) else argument
        variables = self.resolve(variables)

        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in variables:
                return str(variables[name])
            if "." in name:
                return str(self.get_att(*name.split(".", 1)))
            return str(self.ref(name))

        return re.sub(r"\$\{([^}!]+)\}", one, text)

    def properties(self, logical_id: str) -> dict[str, Any]:
        return self.resources[logical_id].get("Properties", {})  # type: ignore[no-any-return]

    def ref(self, logical_id: str) -> Any:
        if logical_id in PSEUDO:
            return PSEUDO[logical_id]
        kind = self.resources[logical_id]["Type"]
        name = self._name(logical_id)
        by_kind = {
            "AWS::SecretsManager::Secret": lambda: arn("secretsmanager", f"secret:{name}{SECRET_SUFFIX}"),
            "AWS::StepFunctions::StateMachine": lambda: arn("states", f"stateMachine:{name}"),
            "AWS::SNS::Topic": lambda: arn("sns", name),
            "AWS::IAM::ManagedPolicy": lambda: f"arn:{PARTITION}:iam::{ACCOUNT}:policy/{name}",
        }
        return by_kind[kind]() if kind in by_kind else name

    def _name(self, logical_id: str) -> str:
        """The physical name: the one the template sets, or one CloudFormation makes up."""
        properties = self.properties(logical_id)
        for key in ("TableName", "FunctionName", "RoleName", "Name", "StateMachineName", "LogGroupName"):
            if key in properties:
                return str(self.resolve(properties[key]))
        return f"{STACK_NAME}-{logical_id}"

    def get_att(self, logical_id: str, attribute: str) -> Any:
        kind = self.resources[logical_id]["Type"]
        name = self._name(logical_id)
        if attribute != "Arn":
            return f"{name}.{attribute}"
        arns = {
            "AWS::DynamoDB::Table": lambda: arn("dynamodb", f"table/{name}"),
            "AWS::Lambda::Function": lambda: arn("lambda", f"function:{name}"),
            "AWS::IAM::Role": lambda: f"arn:{PARTITION}:iam::{ACCOUNT}:role/{name}",
            "AWS::Events::EventBus": lambda: arn("events", f"event-bus/{name}"),
            "AWS::Logs::LogGroup": lambda: arn("logs", f"log-group:{name}:*"),
            "AWS::SQS::Queue": lambda: arn("sqs", name),
        }
        if kind not in arns:
            return self.ref(logical_id)
        return arns[kind]()

    # --- what IAM evaluates -------------------------------------------------------------

    def identity_policies(self, role_logical_id: str) -> list[dict[str, Any]]:
        """The policy documents of a role: its inline policies and the AWS::IAM::Policy
        resources attached to it (AWS managed policies are named, not included)."""
        role = self.properties(role_logical_id)
        documents = [self.resolve(p["PolicyDocument"]) for p in role.get("Policies", [])]
        for policy in self.of_type("AWS::IAM::Policy").values():
            roles = policy["Properties"].get("Roles", [])
            if {"Ref": role_logical_id} in roles:
                documents.append(self.resolve(policy["Properties"]["PolicyDocument"]))
        return documents

    def role_of(self, logical_id: str) -> str:
        """The logical id of the role a function or a state machine runs as."""
        role = self.properties(logical_id)["Role" if "Role" in self.properties(logical_id) else "RoleArn"]
        return str(role["Fn::GetAtt"][0])

    def state_machine_definition(self, logical_id: str, asset_text: str) -> dict[str, Any]:
        """The definition as deployed: the template's own, or (when CDK uploads it as an
        asset) `asset_text`, with the template's substitutions made."""
        properties = self.properties(logical_id)
        text = (
            self.resolve(properties["DefinitionString"]) if "DefinitionString" in properties else asset_text
        )
        substitutions = self.resolve(properties.get("DefinitionSubstitutions", {}))
        text = re.sub(r"\$\{(\w+)\}", lambda m: str(substitutions.get(m.group(1), m.group(0))), text)
        return json.loads(text)  # type: ignore[no-any-return]
