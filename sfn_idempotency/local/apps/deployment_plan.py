"""What the engine deploys of a template, and what it leaves out: each resource it cannot run
skipped (with what only it needed), stood in for on request, or deployed for a mock file alone.
A CDK app's stacks (sfn_idempotency.local.apps.cloud_assembly) and a SAM template's
(sfn_idempotency.local.apps.sam_templates) are planned alike, before any change."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sfn_idempotency.local import runtimes
from sfn_idempotency.local.apps import sam_templates
from sfn_idempotency.local.apps.deployed import DeploymentError, SkippedResource
from sfn_idempotency.local.apps.stand_ins import StoodIn, resolved, stood_in, wanted

# The resource types the engine deploys and runs. Python and Node.js Lambda functions run in the
# engine's runtimes (sfn_idempotency.local.runtimes); a function of another runtime, or an image,
# cannot run here. REST APIs are served on loopback (sfn_idempotency.local.http).
DEPLOYED_TYPES = frozenset(
    {
        "AWS::ApiGateway::Account",
        "AWS::ApiGateway::Deployment",
        "AWS::ApiGateway::Method",
        "AWS::ApiGateway::Resource",
        "AWS::ApiGateway::RestApi",
        "AWS::ApiGateway::Stage",
        "AWS::CloudWatch::Alarm",
        "AWS::CloudWatch::Dashboard",
        "AWS::DynamoDB::Table",
        "AWS::Events::Archive",
        "AWS::Events::EventBus",
        "AWS::Events::Rule",
        "AWS::IAM::InstanceProfile",
        "AWS::IAM::ManagedPolicy",
        "AWS::IAM::Policy",
        "AWS::IAM::Role",
        "AWS::KMS::Alias",
        "AWS::KMS::Key",
        "AWS::Lambda::EventSourceMapping",
        "AWS::Lambda::Function",
        "AWS::Lambda::LayerVersion",
        "AWS::Lambda::Permission",
        "AWS::Lambda::Version",
        "AWS::Logs::LogGroup",
        "AWS::Logs::MetricFilter",
        "AWS::Logs::ResourcePolicy",
        "AWS::S3::Bucket",
        "AWS::SNS::Subscription",
        "AWS::SNS::Topic",
        "AWS::SQS::Queue",
        "AWS::SQS::QueuePolicy",
        "AWS::SSM::Parameter",
        "AWS::StepFunctions::Activity",
        "AWS::StepFunctions::StateMachine",
    }
)
# Resources that only grant access: one about a resource the engine skips is skipped with it.
PERMISSION_TYPES = frozenset(
    {"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::Lambda::Permission", "AWS::SQS::QueuePolicy"}
)
SAM_TYPE_PREFIX = "AWS::Serverless::"
LAMBDA_FUNCTION = "AWS::Lambda::Function"
OUTPUT = "Output"  # how a skipped output is named beside skipped resources
# CDK's version reporting: nothing to create or run.
METADATA_TYPES = frozenset({"AWS::CDK::Metadata"})


# -- what the engine runs ---------------------------------------------------------------------
@dataclass(frozen=True)
class MockedOnly:
    """A function the engine cannot run, deployed all the same because a mock file answers for it."""

    logical_id: str
    reason: str

    def line(self, stack_name: str) -> str:
        return (
            f"{stack_name}: {self.logical_id} ({LAMBDA_FUNCTION}) deployed for the mock file ({self.reason}): "
            f"a call the mock file does not answer fails with {runtimes.UNAVAILABLE}"
        )


@dataclass(frozen=True)
class Plan:
    """A template as the engine deploys it (``template``), what it leaves out (``skipped``), what
    it stands in for on request (``stood_in``, sfn_idempotency.local.apps.stand_ins), and the
    functions only a mock file answers for (``mocked_only``)."""

    template: dict[str, Any]
    skipped: tuple[SkippedResource, ...]
    stood_in: tuple[StoodIn, ...] = ()
    mocked_only: tuple[MockedOnly, ...] = ()


def needs(resource: Mapping[str, Any]) -> set[str]:
    """The logical ids a resource refers to: ``Ref``, ``Fn::GetAtt``, ``Fn::Sub`` and ``DependsOn``."""
    return set(_references(resource.get("Properties", {}))) | _depends_on(resource)


def _references(value: Any) -> Iterator[str]:
    if isinstance(value, list):
        for item in value:
            yield from _references(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key == "Ref" and isinstance(item, str):
                yield item
            elif key == "Fn::GetAtt":
                yield (item.split(".", 1)[0] if isinstance(item, str) else str(item[0]))
            elif key == "Fn::Sub":
                text, variables = (item, {}) if isinstance(item, str) else (item[0], item[1])
                yield from _sub_references(text, variables)
                yield from _references(variables)
            else:
                yield from _references(item)


def _sub_references(text: str, variables: Mapping[str, Any]) -> Iterator[str]:
    for name in re.findall(r"\$\{([^!}][^}]*)\}", text):
        base = name.strip().split(".", 1)[0]
        if base not in variables:
            yield base


def _cannot_run(resource: Mapping[str, Any]) -> str | None:
    """Why the engine cannot run a resource, or None when it can."""
    resource_type = str(resource.get("Type", ""))
    properties = resource.get("Properties", {})
    if resource_type.startswith(SAM_TYPE_PREFIX):
        return f"an AWS SAM resource, which only the transform {sam_templates.SAM_TRANSFORM} turns into resources (give the template to serve --template)"
    if resource_type.startswith("Custom::") or resource_type == "AWS::CloudFormation::CustomResource":
        return "custom resources' providers are not run by the engine"
    if resource_type == LAMBDA_FUNCTION:
        return runtimes.refusal(properties.get("Runtime"), properties.get("PackageType"))
    if resource_type not in DEPLOYED_TYPES:
        return "the engine does not run this resource type"
    return None


def plan(
    template: Mapping[str, Any],
    stand_ins: Mapping[str, StoodIn] | None = None,
    *,
    mocked: bool = False,
    stand_in_for: Callable[[str, str, str], StoodIn] | None = None,
) -> Plan:
    """What the engine deploys of ``template``. A resource it cannot run is skipped; so is a
    policy or permission about a skipped resource. A resource that needs a skipped one is stood in
    for by ``stand_in_for(logical_id, type, reason)`` (the rest of the app runs, and a call to it
    fails as a call to a missing resource), or, without it, fails the deployment (DeploymentError,
    naming both) before anything is created. Stand-ins asked for by name (``stand_ins``) are not
    deployed either, and references to them resolve. With a mock file (``mocked``), a function of a
    runtime the engine lacks is deployed: the file's test cases answer its calls."""
    stand_ins = dict(stand_ins or {})
    while True:
        try:
            return _plan(template, stand_ins, mocked)
        except _NeedsSkipped as needs_skipped:
            if stand_in_for is None:
                raise DeploymentError(needs_skipped.message) from None
            for needed in needs_skipped.needed:
                stand_ins[needed.logical_id] = stand_in_for(
                    needed.logical_id, needed.resource_type, needed.reason
                )


class _NeedsSkipped(Exception):
    """Resources the deployment keeps need resources the engine cannot run (``needed``)."""

    def __init__(self, message: str, needed: Sequence[SkippedResource]) -> None:
        super().__init__(message)
        self.message = message
        self.needed = needed


def _plan(template: Mapping[str, Any], stand_ins: Mapping[str, StoodIn], mocked: bool) -> Plan:
    if stand_ins:
        template = resolved({**template, "Resources": _without(template, stand_ins)}, stand_ins)
    resources: dict[str, Any] = dict(template.get("Resources", {}))
    skipped: dict[str, SkippedResource] = {}
    mocked_only: list[MockedOnly] = []
    for logical_id, resource in resources.items():
        if resource.get("Type") in METADATA_TYPES:
            continue
        reason = _cannot_run(resource)
        if reason is not None and mocked and resource.get("Type") == LAMBDA_FUNCTION:
            mocked_only.append(MockedOnly(logical_id, reason))
        elif reason is not None:
            skipped[logical_id] = SkippedResource(logical_id, resource["Type"], reason)
    changed = True
    while changed:  # permissions about skipped resources go with them (each pass skips at least one)
        changed = False
        for logical_id, resource in resources.items():
            if logical_id in skipped or resource.get("Type") not in PERMISSION_TYPES:
                continue
            about = sorted(needs(resource) & skipped.keys())
            if about:
                reason = f"it grants access to {about[0]}, which is skipped"
                skipped[logical_id] = SkippedResource(logical_id, resource["Type"], reason)
                changed = True
    kept = {
        logical_id: resource
        for logical_id, resource in resources.items()
        if logical_id not in skipped and resource.get("Type") not in METADATA_TYPES
    }
    first_message = ""
    needed: dict[str, SkippedResource] = {}
    for logical_id, resource in kept.items():
        used = set(_references(resource.get("Properties", {}))) & skipped.keys()
        ordered_after = _depends_on(resource) & skipped.keys()
        blocking = sorted(
            used | {name for name in ordered_after if skipped[name].resource_type not in PERMISSION_TYPES}
        )
        if blocking:
            first = skipped[blocking[0]]
            first_message = first_message or (
                f"{logical_id} ({resource['Type']}) needs {first.logical_id} ({first.resource_type}), "
                f"which the engine cannot deploy: {first.reason}"
            )
            needed.update((name, skipped[name]) for name in blocking)
        elif ordered_after:  # only ordered after a skipped permission: the order goes with it
            kept[logical_id] = {**resource, "DependsOn": sorted(_depends_on(resource) - ordered_after)}
    if needed:
        raise _NeedsSkipped(first_message, list(needed.values()))
    outputs = {}
    for name, output in template.get("Outputs", {}).items():
        about = sorted(set(_references(output)) & skipped.keys())
        if about:
            skipped[name] = SkippedResource(name, OUTPUT, f"it refers to {about[0]}, which is skipped")
        else:
            outputs[name] = output
    deployed = {**template, "Resources": kept, **({"Outputs": outputs} if "Outputs" in template else {})}
    return Plan(
        template=deployed,
        skipped=tuple(skipped.values()),
        stood_in=tuple(stand_ins.values()),
        mocked_only=tuple(mocked_only),
    )


def _without(template: Mapping[str, Any], stand_ins: Mapping[str, StoodIn]) -> dict[str, Any]:
    """The resources but the stand-ins; a DependsOn on one goes with it (it is there at once)."""
    kept = {}
    for logical_id, resource in template.get("Resources", {}).items():
        if logical_id in stand_ins:
            continue
        order = _depends_on(resource) - stand_ins.keys()
        if order != _depends_on(resource):
            resource = {**resource, "DependsOn": sorted(order)}
        kept[logical_id] = resource
    return kept


def stand_ins_of(
    template: Mapping[str, Any], patterns: Sequence[str], stack_name: str, account: str, region: str
) -> dict[str, StoodIn]:
    """The resources of ``template`` that ``patterns`` (logical ids or types, globs) ask to stand in for."""
    return {
        logical_id: stood_in(logical_id, str(resource.get("Type", "")), stack_name, account, region)
        for logical_id, resource in template.get("Resources", {}).items()
        if patterns and wanted(patterns, logical_id, str(resource.get("Type", "")))
    }


def _depends_on(resource: Mapping[str, Any]) -> set[str]:
    depends_on = resource.get("DependsOn", [])
    return {depends_on} if isinstance(depends_on, str) else set(depends_on)
