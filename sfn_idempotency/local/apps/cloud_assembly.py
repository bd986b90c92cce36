"""A CDK app, locally: the cloud assembly ``cdk synth`` leaves (``manifest.json``, each stack's
template, its ``*.assets.json`` and asset folders), deployed through moto's CloudFormation.

What a deployment does, in CDK's own order:
1. bootstrap what the templates expect of ``cdk bootstrap``: the assets bucket and the SSM
   parameter holding the bootstrap version (the templates' ``BootstrapVersion`` parameter);
2. publish the file assets (folders zipped, as the CDK CLI zips them) to their destinations;
3. check each template for what the engine cannot run (see ``plan``), and say so, one line each;
4. create each stack, or update it in place when it exists (its tables keep their items).

Only the CloudFormation, S3 and SSM APIs are called, so it works in process and against ``serve``
alike; moto's own stack records are read only to name each resource's ARN. aws-cdk-lib is not needed.
``AssemblyDeployer.plan`` and ``deploy_stack`` deploy one template's stack alike: a SAM template's
(sfn_idempotency.local.apps.sam_templates) goes through them too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import io
import json
import re
import threading
import warnings
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from botocore.parsers import ResponseParserError

from sfn_idempotency.local import runtimes
from sfn_idempotency.local.apps import sam_templates
from sfn_idempotency.local.apps.stand_ins import StoodIn, resolved, stood_in, wanted
from sfn_idempotency.local.compat.patching import CAPABILITY, Patch, keep, missing

MANIFEST = "manifest.json"
STACK_ARTIFACT = "aws:cloudformation:stack"
NESTED_ASSEMBLY = "cdk:cloud-assembly"
ASSET_MANIFEST = "cdk:asset-manifest"
# What every new-style CDK template may ask of `cdk bootstrap`.
DEFAULT_BOOTSTRAP_PARAMETER = "/cdk-bootstrap/hnb659fds/version"
CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"]
NO_UPDATES = "No updates are to be performed"
ROLLED_BACK = "ROLLBACK_COMPLETE"

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


class CloudAssemblyError(ValueError):
    """The folder is not a cloud assembly, or names what it does not have."""


class DeploymentError(RuntimeError):
    """A stack could not be deployed; nothing of that stack is left behind."""


class SkippedResourceWarning(UserWarning):
    """A resource the engine cannot run was left out of a deployment."""


# -- reading the assembly ---------------------------------------------------------------------
@dataclass(frozen=True)
class StackArtifact:
    """One ``aws:cloudformation:stack`` artifact of ``manifest.json``."""

    artifact_id: str
    stack_name: str
    display_name: str
    template_file: Path
    asset_manifests: tuple[Path, ...]
    dependencies: tuple[str, ...]
    bootstrap_parameter: str | None
    bootstrap_version: int | None
    paths: Mapping[str, str]  # logical id -> construct path, from the stack's metadata

    def template(self) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self.template_file.read_text(encoding="utf-8"))
        return document

    def matches(self, pattern: str) -> bool:
        """``cdk deploy``'s selection: the stack's name, id or display (construct) path, globs allowed."""
        names = (self.stack_name, self.artifact_id, self.display_name)
        return any(fnmatch.fnmatchcase(name, pattern) for name in names)


def read_assembly(directory: Path) -> list[StackArtifact]:
    """Every stack of the assembly (nested stages' too), each after the stacks it depends on."""
    stacks = list(_stacks_in(Path(directory)))
    by_id = {stack.artifact_id: stack for stack in stacks}
    ordered: dict[str, StackArtifact] = {}

    def visit(stack: StackArtifact, path: tuple[str, ...]) -> None:
        if stack.artifact_id in path:
            raise CloudAssemblyError(f"stacks depend on each other in a circle: {' -> '.join(path)}")
        for dependency in stack.dependencies:
            if dependency in by_id:
                visit(by_id[dependency], (*path, stack.artifact_id))
        ordered.setdefault(stack.artifact_id, stack)

    for stack in stacks:
        visit(stack, ())
    return list(ordered.values())


def _stacks_in(directory: Path) -> Iterator[StackArtifact]:
    manifest_file = directory / MANIFEST
    if not manifest_file.is_file():
        raise CloudAssemblyError(f"{directory} is not a cloud assembly: it has no {MANIFEST} (run cdk synth)")
    try:
        artifacts: dict[str, Any] = json.loads(manifest_file.read_text(encoding="utf-8"))["artifacts"]
    except (ValueError, KeyError) as error:
        raise CloudAssemblyError(f"{manifest_file}: not a cloud assembly manifest ({error})") from None
    for artifact_id, artifact in artifacts.items():
        properties = artifact.get("properties", {})
        if artifact.get("type") == NESTED_ASSEMBLY:
            yield from _stacks_in(directory / properties["directoryName"])
        elif artifact.get("type") == STACK_ARTIFACT:
            dependencies = tuple(artifact.get("dependencies", ()))
            assets = tuple(
                directory / artifacts[name]["properties"]["file"]
                for name in dependencies
                if artifacts.get(name, {}).get("type") == ASSET_MANIFEST
            )
            yield StackArtifact(
                artifact_id=artifact_id,
                stack_name=properties.get("stackName", artifact_id),
                display_name=artifact.get("displayName", artifact_id),
                template_file=directory / properties["templateFile"],
                asset_manifests=assets,
                dependencies=dependencies,
                bootstrap_parameter=properties.get("bootstrapStackVersionSsmParameter"),
                bootstrap_version=properties.get("requiresBootstrapStackVersion"),
                paths=_construct_paths(directory, artifact),
            )


def _construct_paths(directory: Path, artifact: Mapping[str, Any]) -> dict[str, str]:
    """``aws:cdk:logicalId`` entries: the manifest's own, or its ``additionalMetadataFile``'s."""
    metadata = dict(artifact.get("metadata", {}))
    extra = artifact.get("additionalMetadataFile")
    if extra and (directory / extra).is_file():
        metadata.update(json.loads((directory / extra).read_text(encoding="utf-8")))
    return {
        str(entry["data"]): path.lstrip("/")
        for path, entries in metadata.items()
        for entry in entries
        if entry.get("type") == "aws:cdk:logicalId"
    }


def select(stacks: Sequence[StackArtifact], patterns: Sequence[str]) -> list[StackArtifact]:
    """The stacks ``patterns`` name, with the stacks they depend on (as ``cdk deploy`` does); all
    of them when no pattern is given. A pattern that names nothing is an error naming the stacks."""
    if not patterns:
        return list(stacks)
    unmatched = [pattern for pattern in patterns if not any(stack.matches(pattern) for stack in stacks)]
    if unmatched:
        available = ", ".join(stack.display_name for stack in stacks) or "none"
        raise CloudAssemblyError(f"no stack matches {', '.join(unmatched)} (the assembly has: {available})")
    by_id = {stack.artifact_id: stack for stack in stacks}
    wanted: set[str] = set()

    def want(stack: StackArtifact) -> None:
        if stack.artifact_id not in wanted:
            wanted.add(stack.artifact_id)
            for dependency in stack.dependencies:
                if dependency in by_id:
                    want(by_id[dependency])

    for stack in stacks:
        if any(stack.matches(pattern) for pattern in patterns):
            want(stack)
    return [stack for stack in stacks if stack.artifact_id in wanted]


# -- what the engine runs ---------------------------------------------------------------------
@dataclass(frozen=True)
class SkippedResource:
    logical_id: str
    resource_type: str
    reason: str

    def line(self, stack_name: str) -> str:
        return f"{stack_name}: skipped {self.logical_id} ({self.resource_type}): {self.reason}"


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


# -- assets -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class FileAsset:
    source: Path
    packaging: str
    bucket: str
    key: str

    def body(self) -> bytes:
        """What the CDK CLI uploads: the file, or the folder zipped (a ``.zip`` file as it is)."""
        if self.packaging != "zip" or self.source.is_file():
            return self.source.read_bytes()
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(self.source.rglob("*")):
                if path.is_file():
                    archive.write(path, path.relative_to(self.source).as_posix())
        return buffer.getvalue()


def file_assets(asset_manifest: Path, account: str, region: str) -> list[FileAsset]:
    document = json.loads(asset_manifest.read_text(encoding="utf-8"))
    assets = []
    for asset in document.get("files", {}).values():
        source = asset["source"]
        if "path" not in source:  # built by a command of the user's (executable): not here
            continue
        for destination in asset["destinations"].values():
            assets.append(
                FileAsset(
                    source=asset_manifest.parent / source["path"],
                    packaging=source.get("packaging", "file"),
                    bucket=_placeholders(destination["bucketName"], account, region),
                    key=_placeholders(destination["objectKey"], account, region),
                )
            )
    return assets


def _placeholders(text: str, account: str, region: str) -> str:
    return (
        text.replace("${AWS::AccountId}", account)
        .replace("${AWS::Region}", region)
        .replace("${AWS::Partition}", "aws")
    )


# -- deployment -------------------------------------------------------------------------------
@dataclass(frozen=True)
class DeployedResource:
    logical_id: str
    resource_type: str
    physical_id: str
    arn: str | None
    path: str | None  # the construct path (``aws:cdk:path``), e.g. ``MyStack/Orders/Table/Resource``

    def as_json(self) -> dict[str, Any]:
        return {
            "type": self.resource_type,
            "physicalId": self.physical_id,
            **({"arn": self.arn} if self.arn else {}),
            **({"path": self.path} if self.path else {}),
        }


@dataclass(frozen=True)
class DeployedStack:
    """A stack as deployed: its resources by logical id, its outputs, and what was skipped or stood
    in for."""

    name: str
    resources: Mapping[str, DeployedResource]
    outputs: Mapping[str, str] = field(default_factory=dict)
    skipped: tuple[SkippedResource, ...] = ()
    updated: bool = False
    stood_in: tuple[StoodIn, ...] = ()
    # Where the engine serves the stack's REST APIs: by logical id (``<logical id>/<stage>`` when
    # an API has several stages), the local counterpart of ``https://<id>.execute-api.../<stage>/``.
    api_endpoints: Mapping[str, str] = field(default_factory=dict)

    def resource(self, name: str) -> DeployedResource:
        """By logical id, or by construct path below the stack (``Payments/Table``)."""
        if name in self.resources:
            return self.resources[name]
        wanted = {f"{self.name}/{name}", f"{self.name}/{name}/Resource"}
        found = [resource for resource in self.resources.values() if resource.path in wanted]
        if len(found) != 1:
            raise KeyError(f"{self.name} has no resource {name!r} (logical ids: {', '.join(self.resources)})")
        return found[0]

    def physical_id(self, name: str) -> str:
        return self.resource(name).physical_id

    def arn(self, name: str) -> str:
        arn = self.resource(name).arn
        if arn is None:
            raise KeyError(f"{self.name}: {name} has no ARN")
        return arn

    def of_type(self, resource_type: str) -> list[DeployedResource]:
        return [resource for resource in self.resources.values() if resource.resource_type == resource_type]

    def as_json(self) -> dict[str, Any]:
        return {
            "resources": {logical_id: resource.as_json() for logical_id, resource in self.resources.items()},
            "outputs": dict(self.outputs),
            **({"apiEndpoints": dict(self.api_endpoints)} if self.api_endpoints else {}),
            "skipped": [
                {"logicalId": s.logical_id, "type": s.resource_type, "reason": s.reason} for s in self.skipped
            ],
            **(
                {
                    "stoodIn": [
                        {"logicalId": s.logical_id, "type": s.resource_type, "arn": s.arn}
                        for s in self.stood_in
                    ]
                }
                if self.stood_in
                else {}
            ),
        }


@dataclass(frozen=True)
class DeployedAssembly:
    """The stacks one deployment made or updated, in the order they were deployed."""

    stacks: tuple[DeployedStack, ...]

    def stack(self, name: str | None = None) -> DeployedStack:
        """The stack of that name; without one, the only stack there is."""
        found = [stack for stack in self.stacks if name is None or stack.name == name]
        if len(found) != 1:
            names = ", ".join(stack.name for stack in self.stacks)
            wanted = f"stack {name!r}" if name else "exactly one stack"
            raise KeyError(f"{wanted} not deployed (deployed: {names})")
        return found[0]

    def as_json(self) -> dict[str, Any]:
        return {stack.name: stack.as_json() for stack in self.stacks}


class AssemblyDeployer:
    """Deploys a cloud assembly into a cloud's CloudFormation (``client`` makes boto3 clients)."""

    def __init__(self, client: Any, account: str, region: str, *, mocked: bool = False) -> None:
        """``mocked``: a mock file answers Task calls (see ``plan``)."""
        self._client = client
        self._account = account
        self._region = region
        self._mocked = mocked

    def deploy(
        self, directory: Path, stacks: Sequence[str] = (), stand_in: Sequence[str] = ()
    ) -> DeployedAssembly:
        """``stand_in``: logical ids or resource types (globs) to stand in for (local.stand_ins)."""
        selected = select(read_assembly(Path(directory)), stacks)
        plans = [  # every refusal before any change
            (stack, self.plan(stack.stack_name, stack.template(), stand_in)) for stack in selected
        ]
        self._bootstrap(selected)
        deployed = []
        for stack, stack_plan in plans:
            self._publish(stack)
            deployed.append(self.deploy_stack(stack.stack_name, stack_plan, stack.paths))
        return DeployedAssembly(tuple(deployed))

    def plan(self, stack_name: str, template: dict[str, Any], stand_in: Sequence[str] = ()) -> Plan:
        """What the engine deploys of a stack's template: the SAM transform applied when the
        template asks for it (sfn_idempotency.local.apps.sam_templates), what it cannot run left out."""
        if sam_templates.is_sam(template):
            template = sam_templates.translate(template, {}, self._region, self._client("iam"))
        stand_ins = stand_ins_of(template, stand_in, stack_name, self._account, self._region)

        def stand_in_for(logical_id: str, resource_type: str, reason: str) -> StoodIn:
            found = stood_in(logical_id, resource_type, stack_name, self._account, self._region)
            return dataclasses.replace(found, reason=reason)

        return plan(template, stand_ins, mocked=self._mocked, stand_in_for=stand_in_for)

    def deploy_stack(
        self,
        stack_name: str,
        stack_plan: Plan,
        paths: Mapping[str, str] | None = None,
        parameters: Mapping[str, str] | None = None,
    ) -> DeployedStack:
        """One stack, after one warning line for each resource skipped or stood in for."""
        for line in [
            *(s.line(stack_name) for s in stack_plan.skipped),
            *(s.line(stack_name) for s in stack_plan.stood_in),
            *(s.line(stack_name) for s in stack_plan.mocked_only),
        ]:
            warnings.warn(line, SkippedResourceWarning, stacklevel=3)
        return self._deploy_stack(stack_name, stack_plan, dict(paths or {}), dict(parameters or {}))

    def _bootstrap(self, stacks: Iterable[StackArtifact]) -> None:
        """The bootstrap version parameter at the version the assembly asks for."""
        ssm = self._client("ssm")
        wanted: dict[str, int] = {}
        for stack in stacks:
            name = stack.bootstrap_parameter or DEFAULT_BOOTSTRAP_PARAMETER
            wanted[name] = max(wanted.get(name, 0), stack.bootstrap_version or 1)
        for name, version in wanted.items():
            ssm.put_parameter(Name=name, Value=str(version), Type="String", Overwrite=True)

    def _publish(self, stack: StackArtifact) -> None:
        s3 = self._client("s3")
        buckets = {bucket["Name"] for bucket in s3.list_buckets().get("Buckets", [])}
        for manifest in stack.asset_manifests:
            for asset in file_assets(manifest, self._account, self._region):
                if asset.bucket not in buckets:
                    s3.create_bucket(Bucket=asset.bucket)
                    buckets.add(asset.bucket)
                s3.put_object(Bucket=asset.bucket, Key=asset.key, Body=asset.body())

    def _deploy_stack(
        self, name: str, stack_plan: Plan, paths: Mapping[str, str], parameters: Mapping[str, str]
    ) -> DeployedStack:
        """Create the stack, or update it in place; a failed creation is rolled back and deleted
        (as the CDK CLI deletes a ROLLBACK_COMPLETE stack before it tries again)."""
        cloudformation = self._client("cloudformation")
        request = {
            "StackName": name,
            "TemplateBody": json.dumps(stack_plan.template),
            "Capabilities": CAPABILITIES,
            "Parameters": [
                {"ParameterKey": key, "ParameterValue": value} for key, value in parameters.items()
            ],
        }
        status = self._status(cloudformation, name)
        if status == ROLLED_BACK:
            cloudformation.delete_stack(StackName=name)
        exists = status not in (None, ROLLED_BACK)
        try:
            if exists:
                cloudformation.update_stack(**request)
            else:
                cloudformation.create_stack(**request)
        except cloudformation.exceptions.ClientError as error:
            if NO_UPDATES not in str(error):
                raise DeploymentError(f"{name}: {error}") from error
        except ResponseParserError as error:  # moto answered an update with the failing service's own body
            raise DeploymentError(
                f"{name}: the {'update' if exists else 'creation'} failed in a resource's own service: {error}"
            ) from error
        if self._status(cloudformation, name) == ROLLED_BACK:
            reason = self._failure(cloudformation, name)
            # the rollback deleted what it could: what it could not, the delete cannot either
            with contextlib.suppress(cloudformation.exceptions.ClientError):
                cloudformation.delete_stack(StackName=name)
            raise DeploymentError(f"{name}: {reason}")
        return self._describe(cloudformation, name, paths, stack_plan, updated=exists)

    @staticmethod
    def _status(cloudformation: Any, name: str) -> str | None:
        """The stack's status; None when there is none (or it was deleted)."""
        try:
            (found,) = cloudformation.describe_stacks(StackName=name)["Stacks"]
        except cloudformation.exceptions.ClientError:
            return None
        status = str(found["StackStatus"])
        return None if status == "DELETE_COMPLETE" else status

    @staticmethod
    def _failure(cloudformation: Any, name: str) -> str:
        """What the stack's events say failed: each resource, its type and its error."""
        events = cloudformation.describe_stack_events(StackName=name)["StackEvents"]
        failed = [
            f"{event['LogicalResourceId']} ({event['ResourceType']}) failed to create: "
            f"{event.get('ResourceStatusReason', '')}"
            for event in events
            if event["ResourceStatus"] == "CREATE_FAILED"
        ]
        return "; ".join(failed) or "its creation was rolled back"

    def _describe(
        self, cloudformation: Any, name: str, paths: Mapping[str, str], stack_plan: Plan, *, updated: bool
    ) -> DeployedStack:
        (description,) = cloudformation.describe_stacks(StackName=name)["Stacks"]
        status = str(description["StackStatus"])
        if not status.endswith("_COMPLETE") or status.startswith(("ROLLBACK", "DELETE")):
            raise DeploymentError(f"{name}: {status} {description.get('StackStatusReason', '')}")
        paginator = cloudformation.get_paginator("list_stack_resources")
        summaries = [s for page in paginator.paginate(StackName=name) for s in page["StackResourceSummaries"]]
        resources = {}
        for summary in summaries:
            logical_id = summary["LogicalResourceId"]
            resources[logical_id] = DeployedResource(
                logical_id=logical_id,
                resource_type=summary["ResourceType"],
                physical_id=summary.get("PhysicalResourceId", ""),
                arn=self._arn_of(name, logical_id, summary.get("PhysicalResourceId", "")),
                path=paths.get(logical_id),
            )
        outputs = {output["OutputKey"]: output["OutputValue"] for output in description.get("Outputs", [])}
        return DeployedStack(
            name, resources, outputs, stack_plan.skipped, updated, stood_in=stack_plan.stood_in
        )

    def _arn_of(self, stack_name: str, logical_id: str, physical_id: str) -> str | None:
        """The resource's ARN: its physical id when that is one, else what ``Fn::GetAtt Arn`` gives."""
        if physical_id.startswith("arn:"):
            return physical_id
        if missing(PATCHES):
            return None
        from moto.cloudformation.models import cloudformation_backends

        backend = cloudformation_backends[self._account][self._region]
        for fake in backend.stacks.values():
            if fake.name == stack_name and fake.status != "DELETE_COMPLETE":
                model = fake.resource_map._parsed_resources.get(logical_id)
                if model is not None and not isinstance(model, str) and hasattr(model, "get_cfn_attribute"):
                    try:
                        if model.has_cfn_attr("Arn"):
                            return str(model.get_cfn_attribute("Arn"))
                    except Exception:  # a model without the attribute after all
                        return None
        return None


# The moto internals read (never replaced) to name ARNs; a moto without them names none.
PATCHES: tuple[Patch, ...] = (
    Patch(CAPABILITY, "moto.cloudformation.models", "cloudformation_backends", keep),
    Patch(CAPABILITY, "moto.cloudformation.parsing:ResourceMap", "__getitem__", keep),
)


# -- re-deploying after `cdk synth` -----------------------------------------------------------
WATCH_INTERVAL_SECONDS = 1.0


def fingerprint(directory: Path) -> tuple[tuple[str, int, int], ...]:
    """What changes when ``cdk synth`` writes the assembly again: its manifests and templates."""
    files = sorted(Path(directory).glob("*.json"))
    return tuple(
        (path.name, path.stat().st_mtime_ns, path.stat().st_size) for path in files if path.is_file()
    )


def keep_deploying(
    deploy: Callable[[], object],
    changes: Callable[[], object],
    deployed: object,
    what: str,
    stop: threading.Event,
    report: Callable[[str], None],
) -> None:
    """Deploy again each time ``changes()`` answers something other than what was last deployed
    (``deployed``: taken before the first deployment read the files, so an edit made while it ran,
    or before this thread looked, is not missed), once it has stopped changing (``cdk synth``
    writes several files); until ``stop`` is set. A failed deployment is reported, and the stacks
    stay as they were."""
    seen = deployed
    while not stop.wait(WATCH_INTERVAL_SECONDS):
        current = changes()
        if current == seen:
            continue
        if stop.wait(WATCH_INTERVAL_SECONDS / 2) or changes() != current:
            continue  # still being written: look again at the next tick
        seen = current
        redeploy(deploy, what, report)


def redeploy(deploy: Callable[[], object], what: str, report: Callable[[str], None]) -> None:
    """Deploy again; a failure is reported in one line, and the stacks stay as they were."""
    try:
        deploy()
    except (CloudAssemblyError, DeploymentError, sam_templates.TemplateError, OSError) as error:
        report(f"re-deploy of {what} failed: {error}")
