"""What a deployment answers (the stacks, their resources, names and ARNs) and how it fails."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sfn_idempotency.local.apps.stand_ins import StoodIn


class CloudAssemblyError(ValueError):
    """The folder is not a cloud assembly, or names what it does not have."""


class DeploymentError(RuntimeError):
    """A stack could not be deployed; nothing of that stack is left behind."""


class SkippedResourceWarning(UserWarning):
    """A resource the engine cannot run was left out of a deployment."""


@dataclass(frozen=True)
class SkippedResource:
    logical_id: str
    resource_type: str
    reason: str

    def line(self, stack_name: str) -> str:
        return f"{stack_name}: skipped {self.logical_id} ({self.resource_type}): {self.reason}"


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
