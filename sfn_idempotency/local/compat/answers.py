"""The Step Functions API's answers: executions, state machines, StartSyncExecution (fixes 3, 5, 12,
14, 17)."""

from __future__ import annotations

import copy
import datetime
import functools
import json
import threading
import uuid
from collections.abc import Callable
from typing import Any

from moto.core.exceptions import AWSError

from sfn_idempotency.local.compat.patching import Patch, add, keep

_EXECUTION_MODULE = "moto.stepfunctions.parser.backend.execution"
_PARSER_MODELS_MODULE = "moto.stepfunctions.parser.models"
_RESPONSES_MODULE = "moto.core.responses"
_SYNC_STATES_URL = r"https?://sync-states\.(.+)\.amazonaws.com"
_SYNC_EXECUTIONS_KEPT = 256  # for LocalCloud.run_sync's history; AWS keeps none for Express


def with_output_text(execution: Any, answer: dict[str, Any]) -> dict[str, Any]:
    """moto's Describe/StartSync answers encode the output as JSON; after fix 3 it is JSON text
    already, so the answer takes it as it is (encoding it again would quote it twice)."""
    if "output" in answer:
        answer["output"] = execution.output
    return answer


def epoch_ms(moment: datetime.datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp() * 1000)


class StateMachineTypeNotSupportedError(Exception):
    """Raised for a Standard state machine; answered as AWS's StateMachineTypeNotSupported."""


# Express executions started with StartSyncExecution, newest last: AWS offers no history for them,
# the local engine keeps the last few for LocalCloud.run_sync (tests read the states visited).
sync_executions: dict[str, Any] = {}
sync_executions_lock = threading.Lock()


def _start_sync_execution(
    self: Any, state_machine_arn: str, name: str | None = None, execution_input: str | None = None
) -> dict[str, Any]:
    """The parser backend's StartSyncExecution: run an Express execution to its end, inline."""
    from moto.stepfunctions.exceptions import InvalidExecutionInput
    from moto.stepfunctions.parser.backend.execution import SyncExecution

    state_machine = self.describe_state_machine(state_machine_arn)
    if state_machine.type != "EXPRESS":
        raise StateMachineTypeNotSupportedError(
            "This operation is not supported by this type of state machine"
        )
    input_data = "{}" if execution_input is None else execution_input
    try:
        json.loads(input_data)
    except ValueError as error:
        raise InvalidExecutionInput(str(error)) from None
    name = name or str(uuid.uuid4())
    arn = f"arn:{self.partition}:states:{self.region_name}:{self.account_id}:express:{state_machine.name}:{name}:{uuid.uuid4()}"
    snapshot = copy.deepcopy(
        state_machine, {id(state_machine.executions): [], id(state_machine.backend): state_machine.backend}
    )
    execution = SyncExecution(
        name=name,
        sm_type=snapshot.sm_type,
        role_arn=snapshot.roleArn,
        exec_arn=arn,
        account_id=self.account_id,
        region_name=self.region_name,
        state_machine=snapshot,
        start_date=datetime.datetime.now(tz=datetime.UTC),
        cloud_watch_logging_session=None,
        input_data=input_data,
        trace_header=None,
        activity_store={},
    )
    execution.start()  # the sync worker runs the program in this thread, to its end
    with sync_executions_lock:
        sync_executions[arn] = execution
        while len(sync_executions) > _SYNC_EXECUTIONS_KEPT:
            sync_executions.pop(next(iter(sync_executions)))
    return with_output_text(execution, execution.to_start_sync_execution_output())


def _start_sync_execution_response(self: Any) -> Any:
    from moto.core.exceptions import JsonRESTError
    from moto.core.responses import ActionResult

    try:
        output = self.stepfunction_backend.start_sync_execution(
            self._get_param("stateMachineArn"), self._get_param("name"), self._get_param("input")
        )
    except StateMachineTypeNotSupportedError as error:
        raise JsonRESTError("StateMachineTypeNotSupported", str(error)) from None
    return ActionResult(output)


def _route_sync_states() -> None:
    """Requests to sync-states.<region>.amazonaws.com reach the Step Functions responses."""
    import re

    from moto import backend_index
    from moto.stepfunctions import urls

    if _SYNC_STATES_URL not in urls.url_bases:
        urls.url_bases.append(_SYNC_STATES_URL)
    if not any(pattern.pattern == _SYNC_STATES_URL for _, pattern in backend_index.backend_url_patterns):
        backend_index.backend_url_patterns.append(("stepfunctions", re.compile(_SYNC_STATES_URL)))


def _store_output_as_json_text(original: Callable[[Any], None]) -> Callable[[Any], None]:
    def reflect_execution_status(self: Any) -> None:
        original(self)
        if self.execution.exec_status == "SUCCEEDED":
            self.execution.output = json.dumps(self.execution.output, separators=(",", ":"))

    return reflect_execution_status


def _name_unnamed_executions(original: Callable[..., Any]) -> Callable[..., Any]:
    def start_execution(
        self: Any, state_machine_arn: str, name: str | None = None, *args: Any, **kwargs: Any
    ) -> Any:
        return original(self, state_machine_arn, name or str(uuid.uuid4()), *args, **kwargs)

    return start_execution


class StateMachineAlreadyExists(AWSError):  # type: ignore[misc]  # moto is not followed (pyproject)
    TYPE = "StateMachineAlreadyExists"
    STATUS = 400


def _refuse_a_different_machine_under_a_taken_name(original: Callable[..., Any]) -> Callable[..., Any]:
    def create_state_machine(self: Any, name: str, definition: str, roleArn: str, **kwargs: Any) -> Any:
        existing = next((machine for machine in self.state_machines if machine.name == name), None)
        requested = (definition, roleArn, kwargs.get("sm_type") or "STANDARD")
        if existing is not None and (existing.definition, existing.roleArn, existing.type) != requested:
            raise StateMachineAlreadyExists(f"State Machine Already Exists: '{existing.arn}'")
        return original(self, name, definition, roleArn, **kwargs)

    return create_state_machine


def install_start_sync_execution() -> None:
    """Fix 14 adds an operation moto lacks, rather than replacing one."""
    add(f"{_PARSER_MODELS_MODULE}:StepFunctionsParserBackend", "start_sync_execution", _start_sync_execution)
    add(
        "moto.stepfunctions.responses:StepFunctionResponse",
        "start_sync_execution",
        _start_sync_execution_response,
    )
    _route_sync_states()


PATCHES: tuple[Patch, ...] = (
    Patch(
        3,
        f"{_EXECUTION_MODULE}:BaseExecutionWorkerCommunication",
        "_reflect_execution_status",
        _store_output_as_json_text,
    ),
    Patch(
        5, f"{_PARSER_MODELS_MODULE}:StepFunctionsParserBackend", "start_execution", _name_unnamed_executions
    ),
    Patch(5, _PARSER_MODELS_MODULE, "stepfunctions_parser_backends", keep),
    Patch(12, _RESPONSES_MODULE, "method_names_from_class", functools.cache),
    Patch(14, f"{_EXECUTION_MODULE}:SyncExecution", "to_start_sync_execution_output", keep),
    Patch(14, "moto.stepfunctions.urls", "url_bases", keep),
    Patch(14, "moto.backend_index", "backend_url_patterns", keep),
    Patch(
        17,
        "moto.stepfunctions.models:StepFunctionBackend",
        "create_state_machine",
        _refuse_a_different_machine_under_a_taken_name,
    ),
)
