"""A CDK app, locally: the cloud assembly ``cdk synth`` leaves (``manifest.json``, each stack's
template, its ``*.assets.json`` and asset folders), deployed through moto's CloudFormation.

What a deployment does, in CDK's own order:
1. bootstrap what the templates expect of ``cdk bootstrap``: the assets bucket and the SSM
   parameter holding the bootstrap version (the templates' ``BootstrapVersion`` parameter);
2. publish the file assets (folders zipped, as the CDK CLI zips them) to their destinations;
3. check each template for what the engine cannot run (``deployment_plan``), and say so, one line each;
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
import threading
import warnings
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from botocore.parsers import ResponseParserError

from sfn_idempotency.local.apps import sam_templates
from sfn_idempotency.local.apps.deployed import (
    CloudAssemblyError,
    DeployedAssembly,
    DeployedResource,
    DeployedStack,
    DeploymentError,
    SkippedResourceWarning,
)
from sfn_idempotency.local.apps.deployment_plan import Plan, plan, stand_ins_of
from sfn_idempotency.local.apps.stand_ins import StoodIn, stood_in
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


# -- assets -----------------------------------------------------------------------------------
class Upload(Protocol):
    """A file a deployment puts into S3 before its stack is made."""

    @property
    def bucket(self) -> str: ...

    @property
    def key(self) -> str: ...

    def body(self) -> bytes: ...


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
        self.publish(
            [
                asset
                for manifest in stack.asset_manifests
                for asset in file_assets(manifest, self._account, self._region)
            ]
        )

    def publish(self, files: Iterable[Upload]) -> None:
        """Upload what a stack's resources name in S3 (a CDK app's assets, a SAM template's
        packaged code), each bucket made at first need, as ``cdk deploy`` and ``sam deploy`` do."""
        s3 = self._client("s3")
        buckets = {bucket["Name"] for bucket in s3.list_buckets().get("Buckets", [])}
        for upload in files:
            if upload.bucket not in buckets:
                s3.create_bucket(Bucket=upload.bucket)
                buckets.add(upload.bucket)
            s3.put_object(Bucket=upload.bucket, Key=upload.key, Body=upload.body())

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
        action = "update" if exists else "creation"
        try:
            if exists:
                cloudformation.update_stack(**request)
            else:
                cloudformation.create_stack(**request)
        except cloudformation.exceptions.ClientError as error:
            if NO_UPDATES not in str(error):
                raise DeploymentError(f"{name}: the {action} failed: {error}") from error
        # moto 5.2.5 answered a failed update with the failing service's own body (5.2.6: a ClientError)
        except ResponseParserError as error:
            raise DeploymentError(
                f"{name}: the {action} failed in a resource's own service: {error}"
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
