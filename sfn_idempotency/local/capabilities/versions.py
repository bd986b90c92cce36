"""Versions and aliases of a state machine, as AWS answers them (fix 44).

moto published a version on ``publish=true`` and had aliases, but no PublishStateMachineVersion,
ListStateMachineVersions or DeleteStateMachineVersion; it published a new version even when nothing
had changed since the last one, and could not start an execution of a version or an alias.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from typing import Any

from sfn_idempotency.local.compat.answers import page_start, page_token, updatable_view
from sfn_idempotency.local.compat.events import ALIAS_ARN
from sfn_idempotency.local.compat.patching import Patch, add, keep

_MODELS = "moto.stepfunctions.models"
_PARSER = "moto.stepfunctions.parser.models:StepFunctionsParserBackend"
_RESPONSES = "moto.stepfunctions.responses:StepFunctionResponse"
DEFAULT_PAGE_SIZE = 100
_REVISION = "_sfn_local_revision_id"
_ALIAS = ALIAS_ARN
_starting = threading.Lock()


def _unchanged_since_last_version(original: Callable[..., None]) -> Callable[..., None]:
    """``StateMachine.publish``: a version only when something changed since the latest one (AWS
    answers the latest again), with the revision it was published from."""

    def publish(self: Any, description: str | None) -> None:
        latest = self.latest_version
        if latest is not None and updatable_view(latest) == updatable_view(self):
            return
        original(self, description)
        setattr(self.latest_version, _REVISION, getattr(self, _REVISION, None))

    return publish


def _machine(backend: Any, arn: str) -> Any:
    """The state machine itself, for its ARN or a version's (moto's own lookup and refusal)."""
    found = backend.describe_state_machine(arn)
    source = getattr(found, "source_arn", None)
    return backend.describe_state_machine(source) if source else found


def _publish_state_machine_version(self: Any) -> Any:
    """PublishStateMachineVersion: the new version (or the latest, when nothing changed), refused
    when ``revisionId`` is not the machine's current revision."""
    from moto.core.responses import ActionResult
    from moto.stepfunctions.parser.api import ConflictException

    machine = _machine(self.stepfunction_backend, self._get_param("stateMachineArn"))
    revision = self._get_param("revisionId")
    if revision is not None and revision != getattr(machine, _REVISION, None):
        raise ConflictException(
            f"Failed to publish the State Machine version for revision {revision}. "
            f"The current State Machine revision is {getattr(machine, _REVISION, None)}."
        )
    machine.publish(self._get_param("description"))
    version = machine.latest_version
    return ActionResult({"creationDate": version.creation_date, "stateMachineVersionArn": version.arn})


def _list_state_machine_versions(self: Any) -> Any:
    """ListStateMachineVersions: newest first, ``maxResults`` a page, ``nextToken`` the next."""
    from moto.core.responses import ActionResult

    machine = _machine(self.stepfunction_backend, self._get_param("stateMachineArn"))
    versions = sorted(machine.versions.values(), key=lambda version: version.version, reverse=True)
    start = page_start(self._get_param("nextToken"))
    size = self._get_int_param("maxResults") or DEFAULT_PAGE_SIZE
    answer: dict[str, Any] = {
        "stateMachineVersions": [
            {"stateMachineVersionArn": v.arn, "creationDate": v.creation_date}
            for v in versions[start : start + size]
        ]
    }
    if start + size < len(versions):
        answer["nextToken"] = page_token(start + size)
    return ActionResult(answer)


def _delete_state_machine_version(self: Any) -> Any:
    """DeleteStateMachineVersion: gone (or already gone); refused while an alias routes to it."""
    from moto.core.responses import ActionResult
    from moto.stepfunctions.parser.api import ConflictException

    arn = str(self._get_param("stateMachineVersionArn"))
    source, _, number = arn.rpartition(":")
    machine = _machine(self.stepfunction_backend, source)
    if not number.isdigit() or int(number) not in machine.versions:
        return ActionResult({})
    routed = [alias.name for alias in machine.aliases.values() if arn in _routed_versions(alias)]
    if routed:
        raise ConflictException(
            "Version to be deleted must not be referenced by an alias. "
            f"Current list of aliases referencing this version: [{', '.join(routed)}]"
        )
    version = machine.versions.pop(int(number))
    if machine.latest_version is version:
        machine.latest_version = None
    return ActionResult({})


def _routed_versions(alias: Any) -> list[str]:
    return [str(route["stateMachineVersionArn"]) for route in alias.routing_configuration]


def _version_or_alias_executions(original: Callable[..., Any]) -> Callable[..., Any]:
    """StartExecution of a version runs that version's definition; of an alias, a version drawn
    by the alias's weights. The execution is listed under the version and under the machine (whose
    DescribeExecution finds it), and names the version and the alias it ran from."""

    def start_execution(self: Any, state_machine_arn: str, *args: Any, **kwargs: Any) -> Any:
        alias = _alias(self, state_machine_arn)
        target = _drawn_version(alias) if alias is not None else state_machine_arn
        found = self.describe_state_machine(target)
        source_arn = getattr(found, "source_arn", None)
        if source_arn is None:
            return original(self, state_machine_arn, *args, **kwargs)
        machine = self.describe_state_machine(source_arn)
        with _starting:
            found.backend = machine.backend
            if not isinstance(found.executions, _LiveExecutions):
                found.executions = _LiveExecutions(found.executions)
            execution = original(self, target, *args, **kwargs)
            if execution not in machine.executions:  # moto put it on the version's list only
                machine.executions.append(execution)
        if alias is not None:
            setattr(execution, _ALIAS, alias.arn)
        return execution

    return start_execution


class _LiveExecutions(list[Any]):
    """A version's executions. Each start copies its machine, versions included, to snapshot the
    definition: a copy of this list is empty, as moto leaves a machine's own list out of the copy
    (its executions hold running threads and locks)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> _LiveExecutions:
        return _LiveExecutions()


def _alias(backend: Any, arn: str) -> Any:
    source, _, name = arn.rpartition(":")
    if not name or name.isdigit() or source.count(":") != 6:
        return None
    try:
        machine = backend.describe_state_machine(source)
    except Exception:
        return None
    return machine.aliases.get(name)


def _drawn_version(alias: Any) -> str:
    routes = alias.routing_configuration
    (chosen,) = random.choices(routes, weights=[int(route["weight"]) for route in routes])
    return str(chosen["stateMachineVersionArn"])


def _list_items_name_the_version(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """ListExecutions' items name the machine, and the version and alias an execution ran (recorded)."""

    def list_executions(self: Any) -> Any:
        answer = original(self)
        backend = self.stepfunction_backend
        for item in answer.result["executions"]:
            machine = backend.describe_execution(item["executionArn"]).state_machine
            source_arn = getattr(machine, "source_arn", None)
            if source_arn is not None:
                item["stateMachineArn"] = source_arn
                item["stateMachineVersionArn"] = machine.arn
            execution = backend.describe_execution(item["executionArn"])
            if getattr(execution, _ALIAS, None) is not None:
                item["stateMachineAliasArn"] = getattr(execution, _ALIAS)
        return answer

    return list_executions


def _described_with_version(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """DescribeExecution names the machine, and the version and the alias an execution ran from."""

    def describe_execution(self: Any) -> Any:
        answer = original(self)
        execution = self.stepfunction_backend.describe_execution(self._get_param("executionArn"))
        source_arn = getattr(execution.state_machine, "source_arn", None)
        if source_arn is not None:
            answer.result["stateMachineArn"] = source_arn
            answer.result["stateMachineVersionArn"] = execution.state_machine.arn
        if getattr(execution, _ALIAS, None) is not None:
            answer.result["stateMachineAliasArn"] = getattr(execution, _ALIAS)
        return answer

    return describe_execution


def _versions_are_not_updated(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """UpdateStateMachine of a version's ARN is refused as a machine that does not exist (recorded;
    moto failed with a server error)."""

    def update_state_machine(self: Any) -> Any:
        from moto.stepfunctions.parser.api import StateMachineDoesNotExist

        arn = self._get_param("stateMachineArn")
        if getattr(self.stepfunction_backend.describe_state_machine(arn), "source_arn", None) is not None:
            raise StateMachineDoesNotExist(f"State Machine Does Not Exist: '{arn}'")
        return original(self)

    return update_state_machine


def _versions_are_not_tagged(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """TagResource and UntagResource of a version's ARN: ResourceNotFound (recorded for TagResource;
    moto tagged it). Tags are the machine's, which every version shares."""

    def tagging(self: Any) -> Any:
        from moto.stepfunctions.parser.api import ResourceNotFound

        arn = str(self._get_param("resourceArn") or "")
        if _is_version_arn(arn):
            raise ResourceNotFound(f"Resource not found: '{arn}'")
        return original(self)

    return tagging


def _is_version_arn(arn: str) -> bool:
    """``arn:<partition>:states:<region>:<account>:stateMachine:<name>:<number>``."""
    parts = arn.split(":")
    return len(parts) == 8 and parts[5] == "stateMachine" and parts[7].isdigit()


def _checked_alias_routes(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """CreateStateMachineAlias refuses routes as AWS words it (distinct versions, versions only,
    weights summing to 100), and answers the existing alias for the same request again but
    refuses another under its name (moto accepted all of these)."""

    def create_state_machine_alias(self: Any) -> Any:
        from moto.core.responses import ActionResult
        from moto.stepfunctions.parser.api import ConflictException, ValidationException

        routes = self._get_param("routingConfiguration") or []
        arns = [str(route.get("stateMachineVersionArn")) for route in routes]
        if len(set(arns)) != len(arns):
            raise ValidationException(
                f"Routing configuration must contain distinct state machine version ARNs. Received: [{', '.join(arns)}]"
            )
        if not all(arn.rpartition(":")[2].isdigit() and arn.count(":") == 7 for arn in arns):
            raise ValidationException(
                f"Routing configuration must contain state machine version ARNs. Received: [{', '.join(arns)}]"
            )
        weights = [int(route.get("weight", 0)) for route in routes]
        if sum(weights) != 100:
            raise ValidationException(
                f"Sum of routing configuration weights must equal 100. Received: [{', '.join(map(str, weights))}]"
            )
        machine = _machine(self.stepfunction_backend, arns[0].rpartition(":")[0]) if arns else None
        existing = machine.aliases.get(self._get_param("name")) if machine is not None else None
        if existing is not None:
            if existing.routing_configuration == routes and existing.description == self._get_param(
                "description"
            ):
                return ActionResult(
                    {"stateMachineAliasArn": existing.arn, "creationDate": existing.creation_date}
                )
            raise ConflictException(
                "Failed to create alias because an alias with the same name and a different routing "
                "configuration already exists."
            )
        return original(self)

    return create_state_machine_alias


def _idempotent_alias_deletion(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """DeleteStateMachineAlias of an alias that is not there succeeds, as AWS answers it."""

    def delete_state_machine_alias(self: Any) -> Any:
        from moto.core.responses import ActionResult
        from moto.stepfunctions.exceptions import ResourceNotFound

        try:
            return original(self)
        except ResourceNotFound:
            return ActionResult({})

    return delete_state_machine_alias


def _missing_alias_updates_refused_as_recorded(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """UpdateStateMachineAlias of an alias that is not there: ResourceNotFound, "Request references
    a resource that does not exist." (recorded, ``test_update_no_such_alias_arn``); moto said
    "State Machine Alias Does Not Exist: '<arn>'", DescribeStateMachineAlias's words."""

    def update_state_machine_alias(self: Any) -> Any:
        from moto.stepfunctions.exceptions import ResourceNotFound
        from moto.stepfunctions.parser.api import ResourceNotFound as ServiceResourceNotFound

        try:
            return original(self)
        except ResourceNotFound:
            raise ServiceResourceNotFound("Request references a resource that does not exist.") from None

    return update_state_machine_alias


def _alias_pages_refused_as_recorded(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """ListStateMachineAliases refuses a bad ``nextToken`` in AWS's words, as every List does."""

    def list_state_machine_aliases(self: Any) -> Any:
        from moto.core.exceptions import InvalidToken as MotoInvalidToken
        from moto.stepfunctions.parser.api import InvalidToken

        try:
            return original(self)
        except MotoInvalidToken:
            raise InvalidToken() from None  # its default message is AWS's

    return list_state_machine_aliases


def install_operations() -> None:
    add(_RESPONSES, "publish_state_machine_version", _publish_state_machine_version)
    add(_RESPONSES, "list_state_machine_versions", _list_state_machine_versions)
    add(_RESPONSES, "delete_state_machine_version", _delete_state_machine_version)
    from moto.stepfunctions.models import StateMachine

    # A version starts executions as its machine does.
    add(
        f"{_MODELS}:StateMachineVersion",
        "_handle_name_input_idempotency",
        StateMachine._handle_name_input_idempotency,
    )


PATCHES: tuple[Patch, ...] = (
    Patch(44, f"{_MODELS}:StateMachine", "publish", _unchanged_since_last_version),
    Patch(44, f"{_MODELS}:StateMachine", "_handle_name_input_idempotency", keep),
    Patch(44, f"{_MODELS}:StateMachineVersion", "__init__", keep),
    Patch(44, _PARSER, "start_execution", _version_or_alias_executions),
    Patch(44, _RESPONSES, "list_executions", _list_items_name_the_version),
    Patch(44, _RESPONSES, "describe_execution", _described_with_version),
    Patch(44, _RESPONSES, "update_state_machine", _versions_are_not_updated),
    Patch(44, _RESPONSES, "tag_resource", _versions_are_not_tagged),
    Patch(44, _RESPONSES, "untag_resource", _versions_are_not_tagged),
    Patch(44, _RESPONSES, "create_state_machine_alias", _checked_alias_routes),
    Patch(44, _RESPONSES, "delete_state_machine_alias", _idempotent_alias_deletion),
    Patch(44, _RESPONSES, "update_state_machine_alias", _missing_alias_updates_refused_as_recorded),
    Patch(44, _RESPONSES, "list_state_machine_aliases", _alias_pages_refused_as_recorded),
)
