"""The Step Functions API's answers: executions, state machines, StartSyncExecution, errors (fixes 3,
5, 12, 14, 17 to 21, 72, 75, 105, 151, and 64, speed)."""

from __future__ import annotations

import base64
import copy
import datetime
import functools
import json
import math
import re
import threading
import uuid
from collections.abc import Callable
from typing import Any

from moto.stepfunctions.exceptions import InvalidArn
from moto.stepfunctions.parser.api import (
    InvalidToken,
    MissingRequiredParameter,
    ResourceNotFound,
    StateMachineAlreadyExists,
    ValidationException,
)
from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

from sfn_idempotency.local.compat.history import written
from sfn_idempotency.local.compat.patching import Patch, add, keep

_EXECUTION_MODULE = "moto.stepfunctions.parser.backend.execution"
_PARSER_MODELS_MODULE = "moto.stepfunctions.parser.models"
_RESPONSES_MODULE = "moto.core.responses"
_SYNC_STATES_URL = r"https?://sync-states\.(.+)\.amazonaws.com"
_SYNC_EXECUTIONS_KEPT = 256  # for LocalCloud.run_sync's history; AWS keeps none for Express
_RESPONSE_CLASS = "moto.stepfunctions.responses:StepFunctionResponse"
_PARSER_API_MODULE = "moto.stepfunctions.parser.api"
# What DescribeStateMachine says of a machine created without a logging configuration (recorded).
_LOGGING_OFF = {"level": "OFF", "includeExecutionData": False}
_DEFAULT_PAGE_SIZE = 100  # the API's default maxResults
_NOT_FOUND = 404  # moto 5.2.6's answer to an operation its API model does not name
_DEFAULT_ERROR_STATUS = 400  # a client error's HTTP status, as moto 5.2.5's AWSError sent it
_UPDATABLE = ("definition", "roleArn", "loggingConfiguration", "tracingConfiguration")
# An unknown operation, as AWS's JSON services answer it (the SDKs read the code after the '#').
_UNKNOWN_OPERATION = "com.amazon.coral.service#UnknownOperationException"


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


def _names_checked(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 151: an execution's name is held to the rules of every Step Functions name (moto's own
    check: no white space, brackets, wildcards, ``"#%\\^|~`$&,;:/``, control characters; at most 80
    characters), as a state machine's and an activity's are: ``Invalid Name: '<name>'`` (recorded
    for activities). moto's parser backend started an execution under any name."""

    def start_execution(
        self: Any, state_machine_arn: str, name: str | None = None, *args: Any, **kwargs: Any
    ) -> Any:
        if name:
            self._validate_name(name)
        return original(self, state_machine_arn, name, *args, **kwargs)

    return start_execution


def _start_sync_execution(
    self: Any, state_machine_arn: str, name: str | None = None, execution_input: str | None = None
) -> dict[str, Any]:
    """The parser backend's StartSyncExecution: run an Express execution to its end, inline."""
    from moto.stepfunctions.exceptions import InvalidExecutionInput
    from moto.stepfunctions.parser.backend.execution import SyncExecution

    if name:
        self._validate_name(name)
    state_machine = self.describe_state_machine(state_machine_arn)
    if state_machine.type != "EXPRESS":
        raise StateMachineTypeNotSupportedError(
            "This operation is not supported by this type of state machine"
        )
    input_data = "{}" if execution_input is None else execution_input
    refusal = execution_input_refusal(input_data)
    if refusal is not None:
        raise InvalidExecutionInput(refusal)
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
    answer = with_output_text(execution, execution.to_start_sync_execution_output())
    answer["billingDetails"] = billing_details(execution.start_date, execution.stop_date)
    return answer


# What an Express execution is billed for (docs: "Express Workflows … duration is rounded up to the
# nearest 100 ms", memory in 64 MB blocks; recorded answers: 64 MB, multiples of 100 ms).
_BILLED_DURATION_STEP_MS = 100
_BILLED_MEMORY_MB = 64


def billing_details(start: datetime.datetime, stop: datetime.datetime | None) -> dict[str, int]:
    """StartSyncExecution's ``billingDetails``: the duration rounded up to the next 100 ms (at least
    100), and the smallest memory block. The engine's duration is its own, not AWS's."""
    elapsed_ms = ((stop or start) - start).total_seconds() * 1000
    steps = max(1, math.ceil(elapsed_ms / _BILLED_DURATION_STEP_MS))
    return {
        "billedMemoryUsedInMB": _BILLED_MEMORY_MB,
        "billedDurationInMilliseconds": steps * _BILLED_DURATION_STEP_MS,
    }


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
            # As moto writes the history's outputs: a timestamp an SDK answer holds in ISO 8601.
            self.execution.output = written(self.execution.output, to_json_str, separators=(",", ":"))

    return reflect_execution_status


# What Jackson, AWS's JSON reader, says a value may begin with; recorded in its refusals.
_JSON_VALUES = "(JSON String, Number, Array, Object or token 'null', 'true' or 'false')"
# What AWS answers for an input with no JSON value in it at all (recorded: an empty string).
_NO_INPUT = "Invalid execution input."
# Python's json module's words for each refusal, and the words Jackson uses for the same refusal.
_JACKSON_WORDS = {
    "Expecting property name enclosed in double quotes": "was expecting double-quote to start field name",
    "Expecting ':' delimiter": "was expecting a colon to separate field name and value",
}


class _NonNumericNumber(ValueError):
    """NaN and Infinity, which Python's json module reads and Jackson (by default) refuses."""


def _refuse_non_numeric(token: str) -> Any:
    raise _NonNumericNumber(token)


def read_json_text(text: str) -> Any:
    """``text`` read as Step Functions reads JSON (Jackson's defaults): ``NaN`` and ``Infinity``,
    which Python's json module reads, are refused (a ``ValueError``), as any text that is not JSON."""
    return json.loads(text, parse_constant=_refuse_non_numeric)


def execution_input_refusal(text: str) -> str | None:
    """Why AWS refuses ``text`` as an execution's input, in its words (the StartExecution answer's
    message); None when it is JSON. Jackson's message leaves out the location it appends."""
    if not text.strip():
        return f"Invalid State Machine Execution Input: '{_NO_INPUT}'"
    try:
        read_json_text(text)
    except _NonNumericNumber as error:
        why = f"Non-standard token '{error}': enable `JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS` to allow"
    except json.JSONDecodeError as error:
        why = jackson_refusal(error)
    else:
        return None
    return f"Invalid State Machine Execution Input: '{why}'"


def jackson_refusal(error: json.JSONDecodeError) -> str:
    """Python's refusal of a JSON text in the words Jackson's parser uses at the same character."""
    text, at = error.doc, error.pos
    if error.msg.startswith("Unterminated string"):
        return "Unexpected end-of-input: was expecting closing quote for a String value"
    if at >= len(text):
        return f"Unexpected end-of-input: expected close marker for {_open_container(text, at)}"
    found = text[at]
    if error.msg == "Expecting value":
        token = re.match(r"[^\W\d][\w$]*", text[at:])
        if token:
            return f"Unrecognized token '{token.group()}': was expecting {_JSON_VALUES}"
        if found in "]}":
            return f"Unexpected character ({_character(found)}): expected a value"
        return f"Unexpected character ({_character(found)}): expected a valid value {_JSON_VALUES}"
    if error.msg == "Expecting ',' delimiter":
        expected = f"was expecting comma to separate {_open_container(text, at)} entries"
    elif error.msg.startswith("Invalid control character"):
        return f"Illegal unquoted character ({_character(found)}): has to be escaped using backslash to be included in string value"
    elif error.msg == "Invalid \\escape":
        return f"Unrecognized character escape {_character(text[at + 1])}"
    elif error.msg == "Extra data" and found.isdigit() and re.search(r"(^|[^\d.eE+-])-?0$", text[:at]):
        return "Invalid numeric value: Leading zeroes not allowed"
    else:
        expected = _JACKSON_WORDS.get(error.msg, "")
    return f"Unexpected character ({_character(found)})" + (f": {expected}" if expected else "")


def _character(char: str) -> str:
    """A character as Jackson names it in a refusal: ``'x' (code 120)``, ``(CTRL-CHAR, code 10)``."""
    code = ord(char)
    if code < 32:
        return f"(CTRL-CHAR, code {code})"
    if code > 255:
        return f"'{char}' (code {code} / 0x{code:x})"
    return f"'{char}' (code {code})"


def _open_container(text: str, at: int) -> str:
    """Jackson's name of the innermost array or object still open before ``at``."""
    open_brackets: list[str] = []
    for token in re.finditer(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', text[:at]):
        bracket = token.group()
        if bracket in "[{":
            open_brackets.append(bracket)
        elif bracket in "]}" and open_brackets:
            open_brackets.pop()
    if not open_brackets:
        return "root"
    return "Object" if open_brackets[-1] == "{" else "Array"


def _input_read_as_aws_reads_it(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 105: an input that is not JSON is refused in AWS's words (moto's were Python's), and
    NaN or Infinity, which Jackson does not read, is refused (moto took it)."""

    def start_execution(self: Any, state_machine_arn: str, *args: Any, **kwargs: Any) -> Any:
        from moto.stepfunctions.exceptions import InvalidExecutionInput

        execution_input = kwargs.get("execution_input", args[1] if len(args) > 1 else None)
        refusal = None if execution_input is None else execution_input_refusal(execution_input)
        if refusal is not None:
            self.describe_state_machine(state_machine_arn)  # an unknown machine is refused first
            raise InvalidExecutionInput(refusal)
        return original(self, state_machine_arn, *args, **kwargs)

    return start_execution


_drawn_names: set[str] = set()  # names fix 5 drew for executions being started: no other has one


def _name_unnamed_executions(original: Callable[..., Any]) -> Callable[..., Any]:
    def start_execution(
        self: Any, state_machine_arn: str, name: str | None = None, *args: Any, **kwargs: Any
    ) -> Any:
        if name:
            return original(self, state_machine_arn, name, *args, **kwargs)
        drawn = str(uuid.uuid4())
        _drawn_names.add(drawn)
        try:
            return original(self, state_machine_arn, drawn, *args, **kwargs)
        finally:
            _drawn_names.discard(drawn)

    return start_execution


def _no_search_for_a_drawn_name(original: Callable[[Any, str, Any], Any]) -> Callable[[Any, str, Any], Any]:
    """Fix 64 (speed): before starting an execution, moto looks through all of its machine's
    executions for one of the same name. A name fix 5 has just drawn is a fresh UUID, which none
    has: the search, which grows with every execution a test suite starts, finds nothing."""

    def handle_name_input_idempotency(self: Any, name: str, execution_input: Any) -> Any:
        if name in _drawn_names:
            return None
        return original(self, name, execution_input)

    return handle_name_input_idempotency


def _refuse_a_different_machine_under_a_taken_name(original: Callable[..., Any]) -> Callable[..., Any]:
    def create_state_machine(self: Any, name: str, definition: str, roleArn: str, **kwargs: Any) -> Any:
        existing = next((machine for machine in self.state_machines if machine.name == name), None)
        requested = (definition, roleArn, kwargs.get("sm_type") or "STANDARD")
        if existing is not None and (existing.definition, existing.roleArn, existing.type) != requested:
            raise StateMachineAlreadyExists(f"State Machine Already Exists: '{existing.arn}'")
        return original(self, name, definition, roleArn, **kwargs)

    return create_state_machine


def _coded_errors(base: type[Exception]) -> type[Exception]:
    """moto 5.2.5's parser API declares each Step Functions error with its AWS code as ``code``, but
    its base class (``AWSError``) serializes ``TYPE`` (None): every such error reached clients as
    ``{"__type": null}``, so an SDK raised a bare ClientError instead of InvalidDefinition,
    InvalidExecutionInput... Give each its code; the base class itself is left as it is. From moto
    5.2.6 the base is moto's ``ServiceException``, which serializes ``code`` itself: nothing to do."""
    if not hasattr(base, "TYPE"):
        return base
    pending = list(base.__subclasses__())
    while pending:
        error = pending.pop()
        pending.extend(error.__subclasses__())
        code = error.__dict__.get("code")
        if error.__module__ == _PARSER_API_MODULE and isinstance(code, str):
            error.TYPE = code
            error.STATUS = error.__dict__.get("status_code", _DEFAULT_ERROR_STATUS)  # type: ignore[attr-defined]
    return base


def _described_state_machine(original: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    """DescribeStateMachine (and so DescribeStateMachineForExecution) as recorded: logging ``OFF``
    with ``includeExecutionData: false`` by default, the ``revisionId`` of the last update (moto
    left both out), and the ``variableReferences`` of each state (fix 45)."""

    def describe(self: Any, state_machine_arn: str) -> Any:
        answer = original(self, state_machine_arn)
        machine = self.stepfunction_backend.describe_state_machine(state_machine_arn)
        answer.result["loggingConfiguration"] = _logging(machine.loggingConfiguration)
        revision = getattr(machine, "_sfn_local_revision_id", None)
        if revision is not None:
            answer.result["revisionId"] = revision
        references = _variable_references(machine.definition)
        if references:
            answer.result["variableReferences"] = {state: list(names) for state, names in references}
        return answer

    return describe


@functools.lru_cache(maxsize=64)  # the analyser parses the whole definition: once per definition
def _variable_references(definition: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each state's workflow variables, as moto's interpreter finds them in the definition (fix 45)."""
    from moto.stepfunctions.parser.asl.static_analyser.variable_references_static_analyser import (
        VariableReferencesStaticAnalyser,
    )

    try:
        found = VariableReferencesStaticAnalyser.process_and_get(definition=definition)
    except Exception:  # a definition the analyser cannot read names no variables
        return ()
    # Each state's names in alphabetical order, as every recording has them (moto's may vary).
    return tuple((state, tuple(sorted(names))) for state, names in found.items())


def _logging(configuration: dict[str, Any] | None) -> dict[str, Any]:
    return {**_LOGGING_OFF, **(configuration or {})}


def _state_machine_for_execution(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """DescribeStateMachineForExecution also names when the machine was last updated (a required
    member of its answer)."""

    def describe(self: Any) -> Any:
        answer = original(self)
        machine = self.stepfunction_backend.describe_state_machine_for_execution(
            self._get_param("executionArn")
        )
        answer.result["updateDate"] = machine.update_date or machine.creation_date
        return answer

    return describe


def _update_with_revision(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """UpdateStateMachine answers a ``revisionId``, new when anything changed and the same when
    nothing did (none, when nothing ever changed), and refuses an empty update with AWS's message
    (recorded)."""

    def update(self: Any) -> Any:
        if not any(self._get_param(member) for member in _UPDATABLE):
            raise MissingRequiredParameter(
                "Either the definition, the role ARN, the LoggingConfiguration, "
                "or the TracingConfiguration must be specified"
            )
        machine = self.stepfunction_backend.describe_state_machine(self._get_param("stateMachineArn"))
        before = updatable_view(machine)
        answer = original(self)
        if updatable_view(machine) != before:
            machine._sfn_local_revision_id = str(uuid.uuid4())
        revision = getattr(machine, "_sfn_local_revision_id", None)
        if revision is not None:  # an update that changed nothing yet makes no revision (recorded)
            answer.result["revisionId"] = revision
        if machine.latest_version is not None and "stateMachineVersionArn" in answer.result:
            # A version the update published comes from this revision (fix 44).
            machine.latest_version._sfn_local_revision_id = revision
        return answer

    return update


def updatable_view(machine: Any) -> tuple[Any, ...]:
    return (
        machine.definition,
        machine.roleArn,
        json.dumps(machine.loggingConfiguration, sort_keys=True, default=str),
        json.dumps(machine.tracingConfiguration, sort_keys=True, default=str),
    )


def _described_execution(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """DescribeExecution says whether the input is included (``inputDetails``), as AWS does, and
    when a timed-out execution stopped (recorded: ``test_timeouts::test_global_timeout``; moto answered a
    ``stopDate`` for the other ended statuses only)."""

    def describe(self: Any) -> Any:
        answer = original(self)
        answer.result["inputDetails"] = {"included": True}
        if "stopDate" not in answer.result and answer.result.get("status") == "TIMED_OUT":
            execution = self.stepfunction_backend.describe_execution(answer.result["executionArn"])
            if execution.stop_date is not None:
                answer.result["stopDate"] = execution.stop_date
        return answer

    return describe


def _stop_with_error_and_cause(_original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """StopExecution answers its ``stopDate`` and passes the request's ``error`` and ``cause`` to
    the ExecutionAborted event, which has neither when none was given (moto sent empty strings and
    answered no date while the execution was still winding down)."""
    from moto.core.responses import ActionResult

    def stop_execution(self: Any) -> Any:
        execution = self.stepfunction_backend.describe_execution(self._get_param("executionArn"))
        stop_date = datetime.datetime.now(tz=datetime.UTC)
        if execution.status == "RUNNING":
            execution.stop(
                stop_date=stop_date, error=self._get_param("error"), cause=self._get_param("cause")
            )
        return ActionResult({"stopDate": execution.stop_date or stop_date})

    return stop_execution


def _listed_by_name(_original: Callable[..., Any]) -> Callable[..., Any]:
    """ListStateMachines lists by name (recorded: ``sm_0, sm_10, sm_11, sm_12, sm_1, ...``); moto
    listed by creation date. Paged as moto pages it."""
    from moto.stepfunctions.utils import PAGINATION_MODEL
    from moto.utilities.paginator import paginate

    @paginate(pagination_model=PAGINATION_MODEL)  # type: ignore[untyped-decorator]
    def list_state_machines(self: Any) -> list[Any]:
        return sorted(self.state_machines, key=lambda machine: machine.name)

    return list_state_machines  # type: ignore[no-any-return]


def _paged_history(_original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """GetExecutionHistory honours ``reverseOrder``, ``maxResults`` and ``nextToken`` (moto answered
    every event, oldest first, whatever was asked)."""
    from moto.core.responses import ActionResult

    def get_execution_history(self: Any) -> Any:
        history = self.stepfunction_backend.get_execution_history(self._get_param("executionArn"))
        events = list(history["events"])
        if self._get_param("reverseOrder"):
            events.reverse()
        start = page_start(self._get_param("nextToken"))
        size = self._get_int_param("maxResults") or _DEFAULT_PAGE_SIZE
        answer: dict[str, Any] = {"events": events[start : start + size]}
        if start + size < len(events):
            answer["nextToken"] = page_token(start + size)
        return ActionResult(answer)

    return get_execution_history


def _unknown_map_run_named(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 72: moto raised ``ResourceNotFound()`` without its message for a map run it does not
    know, which failed to build and answered HTTP 500; AWS answers ResourceNotFound naming the
    resource, as recorded for TagResource ("Resource not found: '<arn>'")."""

    def operation(self: Any, map_run_arn: str, *args: Any, **kwargs: Any) -> Any:
        known = any(
            execution.exec_worker is not None
            and execution.exec_worker.env.map_run_record_pool_manager.get(map_run_arn) is not None
            for execution in self._get_executions()
        )
        if not known:
            raise ResourceNotFound(f"Resource not found: '{map_run_arn}'")
        return original(self, map_run_arn, *args, **kwargs)

    return operation


def _arn_prefix_checked(original: Callable[[Any, str], None]) -> Callable[[Any, str], None]:
    """Fix 75: a state machine, execution or activity ARN that is not an ARN at all is refused as AWS
    refuses it, "Invalid Arn: 'Invalid ARN prefix: <arn>'" (recorded for DescribeStateMachine,
    ListExecutions, DescribeExecution, GetExecutionHistory, DescribeActivity and GetActivityTask;
    moto named the ARN's kind, or said the execution does not exist)."""

    def validate(self: Any, arn: str) -> None:
        if not str(arn).startswith("arn:"):
            raise InvalidArn(f"Invalid Arn: 'Invalid ARN prefix: {arn}'")
        original(self, arn)

    return validate


def page_token(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"offset": offset}).encode()).decode()


def page_start(token: str | None) -> int:
    if not token:
        return 0
    try:
        offset = json.loads(base64.urlsafe_b64decode(token.encode()))["offset"]
    except (ValueError, KeyError, TypeError):
        offset = None
    if not isinstance(offset, int) or offset < 0:
        raise InvalidToken()  # moto's, with AWS's message: "Invalid Token: 'Invalid token'"
    return offset


def _unknown_operations_in_json(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """An operation moto does not implement raised NotImplementedError, which its server turned into
    an HTML 500 page; from moto 5.2.6 one its API model does not name is an empty 404. A JSON service
    answers an unknown operation with a JSON error every SDK parses."""

    def call_action(self: Any) -> Any:
        from moto.core.responses import get_service_model

        try:
            answer = original(self)
        except NotImplementedError:
            if get_service_model(self.boto3_service_name).protocol != "json":
                raise
            return _unknown_operation(self)
        unknown = answer[0] == _NOT_FOUND and not answer[2] and self._get_action() is None
        if unknown and get_service_model(self.boto3_service_name).protocol == "json":
            return _unknown_operation(self)
        return answer

    return call_action


def _unknown_operation(response: Any) -> tuple[int, dict[str, str], str]:
    operation = str(response.headers.get("X-Amz-Target", "")).rpartition(".")[2]
    body = json.dumps({"__type": _UNKNOWN_OPERATION, "message": f"{operation} is not supported"})
    headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-ErrorType": "UnknownOperationException"}
    return 400, headers, body


def _validated_requests(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Step Functions checks every request against its API's constraints (ranges, lengths, enums,
    patterns; nested members too)
    and refuses one that breaks them with a ValidationException naming each (recorded for
    ``maxResults``, ``nextToken`` and ``statusFilter``); moto accepted them."""

    def call_action(self: Any) -> Any:
        from moto.core.responses import get_service_model

        try:
            operation = get_service_model(self.boto3_service_name).operation_model(self._get_action())
        except Exception:  # an unknown operation: fix 20 answers it
            return original(self)
        request = _request_members(self)
        problems = [
            problem
            for name, shape in (operation.input_shape.members.items() if operation.input_shape else ())
            if (problem := constraint_broken(name, shape, request.get(name))) is not None
        ]
        if problems:
            return _refusal(self, ValidationException(validation_message(problems)))
        return original(self)

    return call_action


def validation_message(problems: list[str]) -> str:
    """Coral's ValidationException message for the problems it found, in its order."""
    count = f"{len(problems)} validation error{'s' if len(problems) > 1 else ''} detected"
    return f"{count}: {'; '.join(problems)}"


def _refusal(response: Any, error: Exception) -> Any:
    """``call_action``'s answer to ``error``, refused before moto's action runs, as moto answers an
    error its action raises. moto 5.2.5's errors were HTTP exceptions, which its server and its
    in-process stub answer wherever they are raised; from 5.2.6 they are ``ServiceException``s, which
    only ``call_action``'s own handler of the action's call serializes."""
    from werkzeug.exceptions import HTTPException

    if isinstance(error, HTTPException):
        raise error
    from moto.core.responses import ActionResult

    status, headers, body = response.serialized(ActionResult(error))
    headers["status"] = status
    status, headers, body = response._transform_response({}, (body, headers))
    headers, body = response._enrich_response(headers, body)
    return status, headers, body


def _request_members(response: Any) -> dict[str, Any]:
    """The request's members, its JSON body parsed once (moto's ``_get_param`` parses the whole body
    again for each member it is asked for, an execution's input included)."""
    if response.automated_parameter_parsing:
        return dict(response.params)
    try:
        members = json.loads(response.body) if response.body else {}
    except ValueError:
        return {}
    return members if isinstance(members, dict) else {}


def constraint_broken(name: str, shape: Any, value: Any) -> str | None:
    """AWS's words for the first constraint of ``shape`` that ``value`` breaks, if any: ranges,
    lengths, enums and patterns, and those of a list's items and a structure's members, which AWS
    names by path (``routingConfiguration.1.member.weight``)."""
    if value is None:
        return None
    problem = _ownconstraint_broken(shape, value)
    if problem is not None:  # the value is rendered only for the message (an execution's input is long)
        return f"Value '{_as_java_renders(value, shape)}' at '{name}' failed to satisfy constraint: Member must {problem}"
    if shape.type_name == "list" and isinstance(value, list):
        for index, item in enumerate(value, start=1):
            if (problem := constraint_broken(f"{name}.{index}.member", shape.member, item)) is not None:
                return problem
    if shape.type_name == "structure" and isinstance(value, dict):
        for member, member_shape in shape.members.items():
            if (
                problem := constraint_broken(f"{name}.{member}", member_shape, value.get(member))
            ) is not None:
                return problem
    return None


# The order AWS lists an enum's values in, where a recording shows it (its own, not the API model's:
# test_sfn_api.py::test_state_machine_status_filter).
_RECORDED_ENUM_ORDER = {
    "ExecutionStatus": ["SUCCEEDED", "TIMED_OUT", "PENDING_REDRIVE", "ABORTED", "FAILED", "RUNNING"]
}


def _ownconstraint_broken(shape: Any, value: Any) -> str | None:
    """What the value itself breaks (not its items or members), as the message goes on after
    "Member must"."""
    limits = shape.metadata
    if shape.type_name in ("integer", "long") and isinstance(value, int):
        if "max" in limits and value > limits["max"]:
            return f"have value less than or equal to {limits['max']}"
        if "min" in limits and value < limits["min"]:
            return f"have value greater than or equal to {limits['min']}"
    if shape.type_name == "string" and isinstance(value, str):
        if shape.enum and value not in shape.enum:
            return f"satisfy enum value set: [{', '.join(_RECORDED_ENUM_ORDER.get(shape.name, shape.enum))}]"
        if "max" in limits and len(value) > limits["max"]:
            return f"have length less than or equal to {limits['max']}"
        if "pattern" in limits and not _matches(limits["pattern"], value):
            return f"satisfy regular expression pattern: {limits['pattern']}"
    if (
        shape.type_name == "list"
        and isinstance(value, list)
        and "max" in limits
        and len(value) > limits["max"]
    ):
        return f"have length less than or equal to {limits['max']}"
    return None


def _matches(pattern: str, value: str) -> bool:
    """Whether the whole value matches, as Java's ``matches``; a pattern Python's re cannot read
    (``\\p{ASCII}``) checks nothing, rather than refusing what AWS accepts."""
    try:
        return re.fullmatch(pattern, value) is not None
    except re.error:
        return True


def _as_java_renders(value: Any, shape: Any) -> str:
    """A value as AWS's messages quote it: a structure as ``Name(member=value, ...)``."""
    if shape.type_name == "list" and isinstance(value, list):
        return "[" + ", ".join(_as_java_renders(item, shape.member) for item in value) + "]"
    if shape.type_name == "structure" and isinstance(value, dict):
        members = ", ".join(f"{member}={value[member]}" for member in shape.members if member in value)
        return f"{shape.name}({members})"
    return str(value)


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
    Patch(
        105,
        f"{_PARSER_MODELS_MODULE}:StepFunctionsParserBackend",
        "start_execution",
        _input_read_as_aws_reads_it,
    ),
    Patch(
        64,
        "moto.stepfunctions.models:StateMachine",
        "_handle_name_input_idempotency",
        _no_search_for_a_drawn_name,
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
    Patch(18, _PARSER_API_MODULE, "ServiceException", _coded_errors),
    Patch(
        72, f"{_PARSER_MODELS_MODULE}:StepFunctionsParserBackend", "describe_map_run", _unknown_map_run_named
    ),
    Patch(
        72, f"{_PARSER_MODELS_MODULE}:StepFunctionsParserBackend", "update_map_run", _unknown_map_run_named
    ),
    Patch(72, f"{_PARSER_MODELS_MODULE}:StepFunctionsParserBackend", "_get_executions", keep),
    Patch(151, f"{_PARSER_MODELS_MODULE}:StepFunctionsParserBackend", "start_execution", _names_checked),
    Patch(75, "moto.stepfunctions.models:StepFunctionBackend", "_validate_machine_arn", _arn_prefix_checked),
    Patch(
        75, "moto.stepfunctions.models:StepFunctionBackend", "_validate_execution_arn", _arn_prefix_checked
    ),
    Patch(75, "moto.stepfunctions.models:StepFunctionBackend", "_validate_activity_arn", _arn_prefix_checked),
    Patch(19, _RESPONSE_CLASS, "_describe_state_machine", _described_state_machine),
    Patch(
        45,
        "moto.stepfunctions.parser.asl.static_analyser.variable_references_static_analyser:"
        "VariableReferencesStaticAnalyser",
        "process_and_get",
        keep,
    ),
    Patch(19, _RESPONSE_CLASS, "describe_state_machine_for_execution", _state_machine_for_execution),
    Patch(19, _RESPONSE_CLASS, "update_state_machine", _update_with_revision),
    Patch(19, _RESPONSE_CLASS, "describe_execution", _described_execution),
    Patch(19, _RESPONSE_CLASS, "stop_execution", _stop_with_error_and_cause),
    Patch(19, _RESPONSE_CLASS, "get_execution_history", _paged_history),
    Patch(19, "moto.stepfunctions.models:StepFunctionBackend", "list_state_machines", _listed_by_name),
    Patch(20, "moto.core.responses:BaseResponse", "call_action", _unknown_operations_in_json),
    Patch(21, _RESPONSE_CLASS, "call_action", _validated_requests),
    # What its refusal is answered with, as moto answers an action's error (from moto 5.2.6).
    Patch(21, _RESPONSE_CLASS, "serialized", keep),
    Patch(21, _RESPONSE_CLASS, "_transform_response", keep),
    Patch(21, _RESPONSE_CLASS, "_enrich_response", keep),
    Patch(21, _RESPONSES_MODULE, "ActionResult", keep),
)
