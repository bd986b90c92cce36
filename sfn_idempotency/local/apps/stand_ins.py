"""Stand-ins: a resource the engine cannot deploy, left out on the user's request instead of
refusing the app, with every reference to it resolved to the name and ARN it would have on AWS.
Nothing answers at that ARN, so a Task that calls it fails as AWS fails a call to a resource that
does not exist (the service's own not-found error), and everything else in the app runs.

Asked for by logical id or resource type, globs allowed (``--stand-in``, ``stand_in=``).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# ARN shapes AWS documents for the types public apps use that the engine does not run; any other
# type gets arn:aws:<service>:<region>:<account>:<type>/<name>, from its own name.
_ARN_SHAPES = {
    "AWS::KinesisFirehose::DeliveryStream": ("firehose", "deliverystream/"),
    "AWS::Kinesis::Stream": ("kinesis", "stream/"),
    "AWS::ECS::Cluster": ("ecs", "cluster/"),
    "AWS::ECS::TaskDefinition": ("ecs", "task-definition/"),
    "AWS::Batch::JobQueue": ("batch", "job-queue/"),
    "AWS::Batch::JobDefinition": ("batch", "job-definition/"),
    "AWS::Glue::Job": ("glue", "job/"),
    "AWS::Athena::WorkGroup": ("athena", "workgroup/"),
    "AWS::SageMaker::Model": ("sagemaker", "model/"),
    "AWS::Pipes::Pipe": ("pipes", "pipe/"),
    "AWS::Lambda::Function": ("lambda", "function:"),
}
_MAX_NAME = 64


@dataclass(frozen=True)
class StoodIn:
    """What references to a stood-in resource resolve to."""

    logical_id: str
    resource_type: str
    name: str
    arn: str
    reason: str = ""  # why the engine stood in for it unasked: what it cannot run

    def attribute(self, name: str) -> str:
        return self.arn if name.endswith("Arn") else self.name

    def line(self, stack_name: str) -> str:
        why = f" ({self.reason})" if self.reason else ""
        return (
            f"{stack_name}: stood in for {self.logical_id} ({self.resource_type}){why}: not deployed; "
            f"its references are {self.arn}, which does not exist here"
        )


def wanted(patterns: Sequence[str], logical_id: str, resource_type: str) -> bool:
    return any(fnmatch.fnmatchcase(logical_id, p) or fnmatch.fnmatchcase(resource_type, p) for p in patterns)


def stood_in(logical_id: str, resource_type: str, stack_name: str, account: str, region: str) -> StoodIn:
    """The name CloudFormation would generate (``<stack>-<logical id>-<suffix>``) and its ARN."""
    name = f"{stack_name}-{logical_id}"[: _MAX_NAME - len("-STANDIN")] + "-STANDIN"
    parts = resource_type.split("::")
    service, prefix = _ARN_SHAPES.get(
        resource_type, (parts[1].lower() if len(parts) > 1 else "unknown", f"{parts[-1].lower()}/")
    )
    return StoodIn(logical_id, resource_type, name, f"arn:aws:{service}:{region}:{account}:{prefix}{name}")


def resolved(value: Any, stand_ins: Mapping[str, StoodIn]) -> Any:
    """``value`` with every ``Ref``, ``Fn::GetAtt`` and ``Fn::Sub`` reference to a stand-in replaced
    by what it resolves to."""
    if isinstance(value, list):
        return [resolved(item, stand_ins) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((key, item),) = value.items()
        if key == "Ref" and item in stand_ins:
            return stand_ins[item].name
        if key == "Fn::GetAtt":
            target, attribute = item.split(".", 1) if isinstance(item, str) else (item[0], item[1])
            if target in stand_ins and isinstance(attribute, str):
                return stand_ins[target].attribute(attribute)
        if key == "Fn::Sub":
            text, variables = (item, {}) if isinstance(item, str) else (item[0], item[1])
            text = _substituted(text, stand_ins, variables)
            return {"Fn::Sub": text if isinstance(item, str) else [text, resolved(variables, stand_ins)]}
    return {key: resolved(item, stand_ins) for key, item in value.items()}


def _substituted(text: str, stand_ins: Mapping[str, StoodIn], variables: Mapping[str, Any]) -> str:
    def replace(found: re.Match[str]) -> str:
        target, _, attribute = found.group(1).strip().partition(".")
        if target in variables or target not in stand_ins:
            return found.group(0)
        return stand_ins[target].attribute(attribute) if attribute else stand_ins[target].name

    return re.sub(r"\$\{([^!}][^}]*)\}", replace, text)
