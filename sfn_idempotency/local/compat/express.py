"""Express executions started with StartExecution, as AWS answers them (fix 46).

An Express execution has no history in the API: AWS names it ``…:express:<machine>:<name>:<id>``,
refuses that ARN wherever an execution's ARN is asked for, and refuses to list an Express machine's
executions (they are read from its log group). moto named them ``…:execution:<machine>:<name>``
and answered all of those calls.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from sfn_idempotency.local.compat.patching import Patch

_PARSER_MODELS = "moto.stepfunctions.parser.models"
_RESPONSES = "moto.stepfunctions.responses:StepFunctionResponse"
_NOT_SUPPORTED = "This operation is not supported by this type of state machine"
_EXPRESS_RESOURCE = "Invalid Arn: 'Resource type not valid in this context: express'"


def is_express_execution(arn: str) -> bool:
    """Whether ``arn`` names an Express execution (``arn:<partition>:states:<region>:<account>:express:…``)."""
    parts = arn.split(":")
    return len(parts) > 5 and parts[5] == "express"


def express_execution(backend: Any, arn: str) -> Any:
    """moto's execution object of an Express execution (moto's own lookup refuses its ARN)."""
    from moto.stepfunctions.parser.api import ExecutionDoesNotExist

    prefix, _, rest = arn.partition(":express:")
    machine = backend.describe_state_machine(f"{prefix}:stateMachine:{rest.split(':', 1)[0]}")
    found = next((e for e in machine.executions if e.exec_arn == arn), None)
    if found is None:
        raise ExecutionDoesNotExist(f"Execution Does Not Exist: '{arn}'")
    return found


def _express_arns(original: type) -> Callable[..., Any]:
    """moto's parser backend builds each execution with ``Execution(exec_arn=…)``: an Express one
    gets the ARN AWS gives it, so its context object's ``Execution.Id`` is that ARN too. (The
    machine's ``type`` says Express; moto's ``sm_type`` says STANDARD for every machine.)"""

    def execution(**kwargs: Any) -> Any:
        if getattr(kwargs.get("state_machine"), "type", None) == "EXPRESS":
            standard_form = str(kwargs["exec_arn"])
            prefix, _, machine_and_name = standard_form.partition(":execution:")
            kwargs["exec_arn"] = f"{prefix}:express:{machine_and_name}:{uuid.uuid4()}"
        return original(**kwargs)

    return execution


def refuse_an_express_execution(arn: str) -> None:
    """InvalidArn for an Express execution's ARN, as the APIs of one execution answer it."""
    from moto.stepfunctions.parser.api import InvalidArn

    if is_express_execution(arn):
        raise InvalidArn(_EXPRESS_RESOURCE)


def _refuses_express_arns(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """DescribeExecution, StopExecution, GetExecutionHistory and DescribeStateMachineForExecution
    refuse an Express execution's ARN (recorded: test_sfn_api_express, InvalidArn)."""

    def answer(self: Any) -> Any:
        refuse_an_express_execution(str(self._get_param("executionArn") or ""))
        return original(self)

    return answer


def _express_machines_list_nothing(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """ListExecutions of an Express machine is StateMachineTypeNotSupported (recorded)."""

    def list_executions(self: Any) -> Any:
        from moto.core.exceptions import JsonRESTError

        machine = self.stepfunction_backend.describe_state_machine(self._get_param("stateMachineArn"))
        if getattr(machine, "type", None) == "EXPRESS":
            raise JsonRESTError("StateMachineTypeNotSupported", _NOT_SUPPORTED)
        return original(self)

    return list_executions


PATCHES: tuple[Patch, ...] = (
    Patch(46, _PARSER_MODELS, "Execution", _express_arns),
    Patch(46, _RESPONSES, "describe_execution", _refuses_express_arns),
    Patch(46, _RESPONSES, "stop_execution", _refuses_express_arns),
    Patch(46, _RESPONSES, "get_execution_history", _refuses_express_arns),
    Patch(46, _RESPONSES, "describe_state_machine_for_execution", _refuses_express_arns),
    Patch(46, _RESPONSES, "list_executions", _express_machines_list_nothing),
)
