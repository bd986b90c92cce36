"""moto's ASL interpreter: its task clients, retry waits, parsing and wording (fixes 1, 2, 9, 10, 11, 16, 26, 27,
87, 98, 135, 140, 141)."""

from __future__ import annotations

import datetime
import functools
import importlib
import json
import pkgutil
import threading
import time
from collections.abc import Callable
from typing import Any

import boto3
from botocore import UNSIGNED
from botocore.client import BaseClient
from botocore.config import Config

from sfn_idempotency.local.compat import integrations
from sfn_idempotency.local.compat.patching import Patch, add, keep

BOTO_CLIENT_MODULE = "moto.stepfunctions.parser.asl.utils.boto_client"
_COMPONENT_PACKAGE = "moto.stepfunctions.parser.asl.component"
_RETRIER_MODULE = "moto.stepfunctions.parser.asl.component.common.retry.retrier_decl"
_EXECUTION_WORKER_MODULE = "moto.stepfunctions.parser.backend.execution_worker"
_PARSER_MODULE = "moto.stepfunctions.parser.asl.parse.asl_parser"
_STATE_MAP_MODULE = f"{_COMPONENT_PACKAGE}.state.exec.state_map.state_map"
_PREPROCESSOR = "moto.stepfunctions.parser.asl.parse.preprocessor:Preprocessor"
_PARSED_PROGRAMS_KEPT = 64
_JSON_PATH_MODULES = (
    "moto.stepfunctions.parser.asl.utils.json_path",
    "moto.stepfunctions.parser.asl.component.common.path.result_path",
)
_PARSED_PATHS_KEPT = 4096
_SIZE_QUOTA_MODULES = tuple(
    f"{_COMPONENT_PACKAGE}.state.{module}"
    for module in ("state", "exec.state_task.state_task_lambda", "exec.state_task.service.state_task_service")
)
_ERROR_EQUALS_MODULE = "moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl"
_UNCATCHABLE_ERRORS = frozenset({"States.Runtime"})
_CUSTOM_ERROR_NAME = (
    "moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name:CustomErrorName"
)
_CHOICE_STATE = f"{_COMPONENT_PACKAGE}.state.choice.state_choice:StateChoice"
_MOTO_NO_MATCH = "No branching option reached in state %s"  # its RuntimeError's first argument
# No recording has AWS's cause: the Step Functions guide's own words for the error (its error names).
_NO_CHOICE_MATCHED_CAUSE = (
    "A Choice state failed to find a match for the condition field extracted from its input."
)

# Seams the engine wires up before the first Task client or parse (engine/patches.py): the handlers
# every Task client's calls pass (botocore event name, handler), and where a parsed program is kept
# (``program_cache(definition, parse)``; by default parsed again in each process).
client_hooks: list[tuple[str, Callable[..., Any]]] = []
ProgramCache = Callable[[str, Callable[[str], Any]], Any]


def _parse_again(definition: str, parse: Callable[[str], Any]) -> Any:
    return parse(definition)


program_cache: ProgramCache = _parse_again
_session_lock = threading.Lock()
_clients: dict[tuple[str, str, str | None], BaseClient] = {}
_session: boto3.Session | None = None


def _interpreter_session() -> boto3.Session:
    global _session
    if _session is None:
        session = boto3.Session(aws_access_key_id="ak", aws_secret_access_key="sk")
        session.events.register("before-parameter-build", integrations.remember_params)
        for event_name, handler in client_hooks:
            session.events.register(event_name, handler)
        session.events.register("after-call.dynamodb", integrations.drop_unasked_capacity)
        session.events.register("after-call.s3", integrations.s3_extended_request_id)
        session.events.register("after-call", integrations.remember_wire_answer)
        _session = session
    return _session


def cached_boto_client_for(region: str, service: str, state_credentials: Any = None) -> BaseClient:
    """Drop-in for moto's ``boto_client_for``; same endpoint and retry settings, built once."""
    from moto.core.models import botocore_stubber
    from moto.settings import moto_server_port

    endpoint_url = None if botocore_stubber.enabled else f"http://localhost:{moto_server_port()}"
    cache_key = (region, service, endpoint_url)
    client = _clients.get(cache_key)
    if client is None:
        with _session_lock:
            client = _clients.get(cache_key)
            if client is None:
                client = _interpreter_session().client(
                    service,
                    region_name=region,
                    endpoint_url=endpoint_url,
                    config=Config(
                        parameter_validation=False,
                        retries={"max_attempts": 0, "total_max_attempts": 1},
                        max_pool_connections=64,
                        # As the SDK for Java that Step Functions runs on (recorded): an S3
                        # PutObject sends a CRC32 (its answer has ChecksumCRC32), a GetObject does
                        # not ask for the object's checksum (its result has none).
                        request_checksum_calculation="when_supported",
                        response_checksum_validation="when_required",
                        # In process nothing checks a signature (fix 12); a server needs the
                        # credential scope to tell the region.
                        # S3 answers an unsigned request as an anonymous one (403), so it is signed.
                        signature_version=UNSIGNED if endpoint_url is None and service != "s3" else None,
                    ),
                )
                _clients[cache_key] = client
    return client


def forget_clients() -> None:
    """Drop the cached clients (a closed cloud's server endpoint is gone; the next cloud builds its own)."""
    with _session_lock:
        for client in _clients.values():
            client.close()
        _clients.clear()


def route_task_clients(modules: list[Any]) -> None:
    """Interpreter modules imported ``boto_client_for`` by name: point each at the cached one too."""
    original = importlib.import_module(BOTO_CLIENT_MODULE)._sfn_local_original_boto_client_for
    for module in modules:
        if getattr(module, "boto_client_for", None) is original:
            module.boto_client_for = cached_boto_client_for


def _value_as_json_text(value: Any) -> Any:
    """Fix 98: ``type`` as moto's Map state module calls it, where its message for an input that is
    not an array wrote the value's Python type ("<class 'dict'>"); AWS writes the value as compact
    JSON ("Map state input must be an array but was: {"foo":"bar"}", recorded). The module's only
    other use names a component's class, which is not JSON and keeps its type."""
    if value is None or isinstance(value, dict | list | str | int | float | bool):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return type(value)


def install_map_input_words() -> None:
    add(_STATE_MAP_MODULE, "type", _value_as_json_text)


def interpreter_modules() -> list[Any]:
    """Every interpreter module, imported now so that none keeps the original later."""
    return [importlib.import_module(name) for name in _interpreter_module_names()]


@functools.cache
def _interpreter_module_names() -> tuple[str, ...]:
    """The interpreter's modules, found once: the walk lists folders on disk, 12 ms at every
    LocalCloud's start (twice), for a list that does not change while the process runs."""
    package = importlib.import_module(_COMPONENT_PACKAGE)
    prefix = f"{_COMPONENT_PACKAGE}."
    return tuple(info.name for info in pkgutil.walk_packages(package.__path__, prefix=prefix))


class _ScaledTime:
    """Stands in for the ``time`` module inside moto's retrier only."""

    scale = 1.0

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds * self.scale)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


retry_time = _ScaledTime()


@functools.lru_cache(maxsize=_PARSED_PROGRAMS_KEPT)
def _parsed(definition: str) -> Any:
    return program_cache(definition, _parsed_by_antlr)


def _parsed_by_antlr(definition: str) -> Any:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    return _draw_heap_keys(AmazonStateLanguageParser.parse(definition)[0])


_parsing = threading.Lock()  # executions starting together parse their definition once


def parsed_program(definition: str) -> Any:
    """The definition's program, parsed once for every execution and every validation of it."""
    with _parsing:
        return _parsed(definition)


def _parse_once(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def get_evaluation_entrypoint(self: Any) -> Any:
        return parsed_program(self._evaluation_details.state_machine_details.definition)

    return get_evaluation_entrypoint


def _validated_by_the_same_parse(original: Callable[[str], None]) -> Any:
    """CreateStateMachine, UpdateStateMachine and ValidateStateMachineDefinition check a definition
    with the parse its executions then use, instead of parsing it again each time; a definition moto
    refuses is refused in moto's own words."""

    def validate_definition(definition: str) -> None:
        try:
            parsed_program(definition)
        except Exception:
            original(definition)
            raise

    return staticmethod(validate_definition)


def _draw_heap_keys(program: Any) -> Any:
    """Touch ``heap_key`` on every component of the program, once, before anyone shares it."""
    from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent

    seen: set[int] = set()
    pending = [program]
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, EvalComponent):
            _ = node.heap_key
        if isinstance(node, dict):
            pending.extend(node.values())
        elif isinstance(node, list | tuple | set | frozenset):
            pending.extend(node)
        elif hasattr(node, "__dict__") and type(node).__module__.startswith("moto.stepfunctions"):
            pending.extend(vars(node).values())
    return program


def _size_counted_in_utf8(_original: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """Fix 145: a state's data is held to 256 KiB "of data as a UTF-8 encoded string" (the quota's
    own words), the JSON text as Step Functions writes it: compact, other scripts as they are. moto
    measured Python's default text, spaces after separators and each non-ASCII character escaped
    (six bytes for an é, where UTF-8 takes two), and refused a result AWS carries. A string literal
    of the definition may hold a character as its two UTF-16 halves (moto's parser keeps them
    apart): each half is counted as UTF-8 would write it, never refused as text UTF-8 cannot hold."""
    from moto.stepfunctions.parser.asl.utils.encoding import _DateTimeEncoder
    from moto.stepfunctions.parser.quotas import MAX_STATE_SIZE_UTF8_BYTES

    def is_within_size_quota(value: Any) -> bool:
        if not isinstance(value, str):
            value = json.dumps(value, cls=_DateTimeEncoder, separators=(",", ":"), ensure_ascii=False)
        return bool(len(value.encode("utf-8", "surrogatepass")) < MAX_STATE_SIZE_UTF8_BYTES)

    return is_within_size_quota


def _parse_path_once(original: Callable[[str], Any]) -> Callable[[str], Any]:
    return functools.lru_cache(maxsize=_PARSED_PATHS_KEPT)(original)


def _wildcard_spares_runtime_errors(original: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    """``States.ALL`` does not match ``States.Runtime`` (documented; no recording shows otherwise).
    It does match ``States.DataLimitExceeded``: AWS recordings show a Catch of ``States.ALL``
    catching an oversized Lambda result, whatever the docs say, so that error is left to moto."""

    def eval_body(self: Any, env: Any) -> None:
        error_name = env.stack[-1]
        if (
            self._STATE_ALL_ERROR in self.error_names
            and getattr(error_name, "error_name", None) in _UNCATCHABLE_ERRORS
        ):
            env.stack.pop()
            env.stack.append(False)
            return
        original(self, env)

    return eval_body


def _any_reported_error_name(_original: Callable[..., None]) -> Callable[..., None]:
    """A Fail state's ``Error`` and a function's ``errorType`` are reported as written, ``States.``
    prefix included: AWS runs published samples whose Parallel branches end in a Fail state with
    ``"Error": "States.QuorumMet"`` that a Catch on that name routes (moto refused the name)."""
    from moto.stepfunctions.parser.asl.component.common.error_name.error_name import ErrorName

    def init(self: Any, error_name: str | None) -> None:
        ErrorName.__init__(self, error_name=error_name)

    return init


def _no_match_fails_as_the_language_names_it(
    original: Callable[[Any, Any], None],
) -> Callable[[Any, Any], None]:
    """A Choice state without a Default none of whose rules matched fails with the language's
    ``States.NoChoiceMatched``, which a Parallel's or Map's ``States.ALL`` catches. moto raised a
    Python RuntimeError, which ended the execution as ``States.Runtime`` with the exception's repr
    as its cause."""
    from moto.stepfunctions.parser.api import ExecutionFailedEventDetails, HistoryEventType
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    # One of the language's own errors, of moto's kind for them (a Catch matches it as one).
    no_match = StatesErrorName(typ=StatesErrorNameType.StatesNoChoiceMatched)

    def _eval_state(self: Any, env: Any) -> None:
        try:
            original(self, env)
        except RuntimeError as error:
            if self.default_state is not None or error.args != (_MOTO_NO_MATCH, self.name):
                raise
            details = ExecutionFailedEventDetails(error=no_match.error_name, cause=_NO_CHOICE_MATCHED_CAUSE)
            raise FailureEventException(
                failure_event=FailureEvent(
                    env=env,
                    error_name=no_match,
                    event_type=HistoryEventType.TaskFailed,  # as moto types a state's own failures
                    event_details=EventDetails(executionFailedEventDetails=details),
                )
            ) from None

    return _eval_state


# How the service begins a state's runtime error's cause (recorded), naming the state that raised it.
_STATE_NAMED = "An error occurred while executing the state '"


def _causes_name_the_state_once(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A runtime error raised inside a Parallel branch or a Map iteration ends the execution with the
    cause its own state wrote, naming that state once (recorded: a Map iteration's 'Fallback'). moto
    named the state again at each program it left, around the first: "…the state 'Both' (entered at
    the event id #4). An error occurred while executing the state 'Inner'…" (an AWS sample's
    Parallel), and, for a Map, "the state 'None'"."""
    from moto.stepfunctions.parser.api import ExecutionFailedEventDetails

    def get_execution_failed_event_details(self: Any) -> Any:
        pair = self.extract_error_cause_pair()
        if pair is None or not str(pair[1] or "").startswith(_STATE_NAMED):
            return original(self)
        error, cause = pair
        details = ExecutionFailedEventDetails()
        if error:
            details["error"] = error
        details["cause"] = cause
        return details

    return get_execution_failed_event_details


# -- fix 141: a JSONPath argument's chained brackets ---------------------------------------------
_INTRINSIC_PARSE = "moto.stepfunctions.parser.asl.parse.intrinsic"
_CHAIN_DOTTED = "].["  # how fix 141 hands ``][`` to moto's lexer


def chains_dotted(text: str) -> str:
    """An intrinsic function's text with each path's ``]['`` chain written ``].['`` (``$['a']['b']``
    becomes ``$['a'].['b']``): moto's lexer takes one bracket after each name of a path, as its
    grammar's TODO says, and the same brackets after a dot. Quoted arguments are left as written."""
    if "][" not in text:
        return text
    out: list[str] = []
    literal = path = quoted = escaped = False
    depth = 0
    for char in text:
        if escaped:
            escaped = False
        elif literal or quoted:
            if char == "\\":
                escaped = True
            elif char == "'":
                literal = quoted = False
        elif path:
            if char == "[":
                if depth == 0 and out[-1] == "]":
                    out.append(".")
                depth += 1
            elif char == "]":
                depth -= 1
            elif char == "'" and depth:
                quoted = True
            elif depth == 0 and (char in ",)" or char.isspace()):
                path = False
        elif char == "'":
            literal = True
        elif char == "$":
            path = True
        out.append(char)
    return "".join(out)


def _bracket_chains_lexed(original: Callable[[str], Any]) -> Any:
    """A path argument of an intrinsic function may chain brackets (``$['test-batch']['batch_id']``,
    an AWS sample's ``States.Format``): moto's lexer stopped at the second bracket, printed a
    "token recognition error" on the terminal, and went on with ``$['test-batch']`` alone, so the
    function formatted the whole object (``run1_{batch_id=7}``, not ``run1_7``)."""

    def parse(src: str) -> Any:
        return original(chains_dotted(src))

    return staticmethod(parse)


def _path_as_written(terminal: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The path's text as the definition wrote it (fix 94's wording of a missing path quotes it)."""

    def build(original: Callable[..., Any]) -> Callable[..., Any]:
        def visit(self: Any, ctx: Any) -> Any:
            token = getattr(ctx, terminal)().symbol
            token.text = token.text.replace(_CHAIN_DOTTED, "][")
            return original(self, ctx)

        return visit

    return build


def _assigned_literals_decoded(_original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A definition is JSON: an ``Assign`` of ``"\\""`` assigns one quote. moto kept that string as
    written, escapes and all (its rule for other literal values decodes them already)."""
    from moto.stepfunctions.parser.asl.component.common.assign.assign_template_value_terminal import (
        AssignTemplateValueTerminalLit,
    )

    def visit(self: Any, ctx: Any) -> Any:
        raw = ctx.string_literal().getText()
        try:
            value = json.loads(raw)
        except ValueError:
            value = self._inner_string_of(ctx.string_literal())
        return AssignTemplateValueTerminalLit(value=value)

    return visit


def _assigned_variables_as_json(
    _original: Callable[[Any], dict[str, str]],
) -> Callable[[Any], dict[str, str]]:
    """A state's ``assignedVariables`` in its history are each value's JSON text; moto wrote a
    string between quotes as it was, so a quote or backslash in it gave text that is not JSON."""

    from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

    def get_assigned_variables(self: Any) -> dict[str, str]:
        return {
            name: to_json_str(self.get(name), separators=(",", ":")) for name in self._declaration_tracing
        }

    return get_assigned_variables


_MOTO_UTC_TEXT = "2023-11-21T06:27:31.545123+00:00"  # how moto writes a moment: isoformat, in UTC


def aws_timestamp(moment: datetime.datetime | str) -> str:
    """A timestamp as the context object holds it on AWS: UTC, milliseconds, ``Z``
    (``2023-11-21T06:27:31.545Z``, recorded)."""
    if isinstance(moment, str):
        if len(moment) == len(_MOTO_UTC_TEXT) and moment[19] == "." and moment.endswith("+00:00"):
            return moment[:23] + "Z"  # moto's own UTC text, microseconds truncated as isoformat does
        moment = datetime.datetime.fromisoformat(moment)
    return moment.astimezone(datetime.UTC).isoformat(timespec="milliseconds").removesuffix("+00:00") + "Z"


def _start_time_as_text(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``$$.Execution.StartTime`` is text on AWS; moto put the datetime itself there, which broke the
    output of any state that read it (DescribeExecution answered HTTP 500)."""

    def get_evaluation_environment(self: Any) -> Any:
        env = original(self)
        execution = env.states.context_object.context_object_data["Execution"]
        execution["StartTime"] = aws_timestamp(execution["StartTime"])
        return env

    return get_evaluation_environment


class StateClock:
    """The time a state is entered at (``$$.State.EnteredTime``): real time unless a LocalCloud
    moves it, as it moves the key Lambda's (a test moves its clock past a lease instead of waiting,
    and a claim made in JSONata reads the clock from the state's entry)."""

    def __init__(self) -> None:
        self.now: Callable[[], float] = time.time  # epoch seconds

    def moment(self) -> datetime.datetime:
        return datetime.datetime.fromtimestamp(self.now(), tz=datetime.UTC)


state_clock = StateClock()


def _entered_time_as_aws_writes_it(original: Callable[..., Any]) -> Callable[..., Any]:
    """``$$.State.EnteredTime`` in the same format (moto: microseconds and ``+00:00``), read from
    ``state_clock`` when the state is entered (moto builds the State context once per entry)."""

    def state_data(**fields: Any) -> Any:
        if "EnteredTime" in fields:
            fields["EnteredTime"] = aws_timestamp(state_clock.moment())
        return original(**fields)

    return state_data


def _downgrade_refused_only_under_a_jsonata_machine(
    original: Callable[[Any, Any], None],
) -> Callable[[Any, Any], None]:
    """A JSONPath state may stand inside a JSONata Map or Parallel of a JSONPath machine (recorded:
    test_sfn_api_validation VALID_QUERY_LANGUAGE_PASS); only a JSONata machine refuses JSONPath
    states. moto refused the downgrade in any JSONata scope."""
    from moto.stepfunctions.parser.asl.component.common.query_language import QueryLanguage, QueryLanguageMode

    def open_query_language_scope(self: Any, parse_tree: Any) -> None:
        try:
            original(self, parse_tree)
        except ValueError as refused:
            machine = (
                self._query_language_per_scope[0].query_language_mode
                if self._query_language_per_scope
                else None
            )
            if "Cannot downgrade" not in str(refused) or machine != QueryLanguageMode.JSONPath:
                raise
            self._query_language_per_scope.append(QueryLanguage())

    return open_query_language_scope


def _own_query_language_scopes(original: Callable[..., None]) -> Callable[..., None]:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self._query_language_per_scope = []

    return __init__


PATCHES: tuple[Patch, ...] = (
    Patch(1, BOTO_CLIENT_MODULE, "boto_client_for", lambda _original: cached_boto_client_for),
    Patch(1, "moto.core.models", "botocore_stubber", keep),
    Patch(2, _RETRIER_MODULE, "time", lambda _original: retry_time),
    Patch(9, f"{_EXECUTION_WORKER_MODULE}:ExecutionWorker", "_get_evaluation_entrypoint", _parse_once),
    Patch(9, _PARSER_MODULE, "AmazonStateLanguageParser", keep),
    Patch(
        9,
        "moto.stepfunctions.parser.models:StepFunctionsParserBackend",
        "_validate_definition",
        _validated_by_the_same_parse,
    ),
    Patch(10, f"{_ERROR_EQUALS_MODULE}:ErrorEqualsDecl", "_eval_body", _wildcard_spares_runtime_errors),
    # Each module that checks the quota imported the function by name: each name is patched.
    *(Patch(145, module, "is_within_size_quota", _size_counted_in_utf8) for module in _SIZE_QUOTA_MODULES),
    Patch(145, "moto.stepfunctions.parser.asl.utils.encoding", "_DateTimeEncoder", keep),
    Patch(145, "moto.stepfunctions.parser.quotas", "MAX_STATE_SIZE_UTF8_BYTES", keep),
    Patch(87, _CUSTOM_ERROR_NAME, "__init__", _any_reported_error_name),
    Patch(135, _CHOICE_STATE, "_eval_state", _no_match_fails_as_the_language_names_it),
    Patch(141, f"{_INTRINSIC_PARSE}.intrinsic_parser:IntrinsicParser", "parse", _bracket_chains_lexed),
    *(
        Patch(141, f"{_INTRINSIC_PARSE}.preprocessor:Preprocessor", visitor, _path_as_written(terminal))
        for visitor, terminal in (
            ("visitFunc_arg_json_path", "JSON_PATH_STRING"),
            ("visitFunc_arg_context_path", "CONTEXT_PATH_STRING"),
            ("visitFunc_arg_var", "STRING_VARIABLE"),
        )
    ),
    Patch(
        140,
        "moto.stepfunctions.parser.asl.component.common.error_name.failure_event:FailureEventException",
        "get_execution_failed_event_details",
        _causes_name_the_state_once,
    ),
    *(Patch(11, json_path_module, "parse", _parse_path_once) for json_path_module in _JSON_PATH_MODULES),
    Patch(16, _PREPROCESSOR, "__init__", _own_query_language_scopes),
    Patch(16, _PREPROCESSOR, "_open_query_language_scope", _downgrade_refused_only_under_a_jsonata_machine),
    Patch(
        26, _PREPROCESSOR, "visitAssign_template_value_terminal_string_literal", _assigned_literals_decoded
    ),
    Patch(
        26,
        "moto.stepfunctions.parser.asl.eval.variable_store:VariableStore",
        "get_assigned_variables",
        _assigned_variables_as_json,
    ),
    Patch(
        27, f"{_EXECUTION_WORKER_MODULE}:ExecutionWorker", "_get_evaluation_environment", _start_time_as_text
    ),
    Patch(
        27, "moto.stepfunctions.parser.asl.component.state.state", "StateData", _entered_time_as_aws_writes_it
    ),
)
