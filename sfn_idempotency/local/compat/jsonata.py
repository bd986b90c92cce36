"""JSONata and workflow variables, evaluated with jsonata-python (fixes 15, 142 and 155; 86, speed:
``$states`` as a value)."""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Callable
from typing import Any

from moto.stepfunctions.parser.asl.jsonata.jsonata import IllegalJSONataVariableReference, JSONataException

from sfn_idempotency.local.compat.patching import Patch, keep
from sfn_idempotency.local.languages import jsonata as stepfunctions_jsonata

_JSONATA_MODULE = "moto.stepfunctions.parser.asl.jsonata.jsonata"
_STRING_EXPRESSION_MODULE = "moto.stepfunctions.parser.asl.component.common.string.string_expression"
_JSONATA_MODE = "JSONata"
_JSONPATH_MODE = "JSONPath"
# A lone $ or $$ outside a string or regex literal: not followed by a name character.
_CONTEXT_REFERENCE = re.compile(r"\$\$?(?![A-Za-z0-9_$])")


# A JSONPath member in brackets, ['name'] or ["name"] (a backslash escapes the quote).
_BRACKETED_MEMBER = re.compile(r"""\[\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\s*\]""")


def _member_as_jsonata(match: re.Match[str]) -> str:
    name = re.sub(r"\\(.)", r"\1", match.group(1) if match.group(1) is not None else match.group(2))
    return match.group(0) if "`" in name else f".`{name}`"


def _bracketed_members_read_as_jsonpath(original: Callable[..., None]) -> Callable[..., None]:
    """Fix 142: a JSONPath state reads a variable with JSONPath (``$order['id']``, ``$v.a['b']``), and
    moto read the whole reference as JSONata, where brackets filter: it answered the whole variable
    (``$v.a``'s whole value). Each bracketed member is handed to JSONata as the same member,
    ``$order.`id```; an index (``$v.list[1]``) already reads the same in both. The reference's text
    is kept as written."""

    def init(self: Any, query_language_mode: Any, expression: str) -> None:
        jsonpath = getattr(query_language_mode, "name", query_language_mode) == "JSONPath"
        original(
            self,
            query_language_mode,
            _BRACKETED_MEMBER.sub(_member_as_jsonata, expression) if jsonpath else expression,
        )
        self.literal_value = expression

    return init


_VARIABLE_REFERENCE = re.compile(r"\$([^\W\d]\w*)(.*)", re.DOTALL)


def _variables_read_as_paths(original: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    """Fixes 146 and 159: a JSONPath state reads a variable (``$v``, ``$v.a[0]``) as JSONPath reads
    a path, from the value as it was assigned. moto evaluated the reference as JSONata, which
    rewrote numbers as JSONata writes them (5.0 as 5: fix 159) and answered null for a member that
    is not there (fix 146: a Choice's ``IsPresent: false`` now matches it, and a field that reads it
    fails the state with States.Runtime, naming the path). A variable that is not assigned at all
    is left to moto, which names it."""

    def eval_body(self: Any, env: Any) -> None:
        reference = _VARIABLE_REFERENCE.fullmatch(self.literal_value)
        if getattr(self.query_language_mode, "name", "") != _JSONPATH_MODE or reference is None:
            original(self, env)
            return
        from moto.stepfunctions.parser.asl.eval.variable_store import NoSuchVariable
        from moto.stepfunctions.parser.asl.utils.json_path import NoSuchJsonPathError, extract_json

        try:
            value = env.variable_store.get(reference[1])
        except NoSuchVariable:
            original(self, env)
            return
        try:
            read = extract_json("$" + reference[2], value) if reference[2] else value
        except NoSuchJsonPathError:
            raise NoSuchJsonPathError(json_path=self.literal_value, data=value) from None
        env.stack.append(copy.deepcopy(read))  # the stored value stays as assigned

    return eval_body


def _evaluate_jsonata(_stub: Any) -> Callable[[str], Any]:
    def evaluate(expression: str) -> Any:
        try:
            return stepfunctions_jsonata.evaluate(expression)
        except stepfunctions_jsonata.JSONataEvaluationError as error:
            raise JSONataException("UNKNOWN", str(error)) from error

    return evaluate


def _no_declared_functions(_original: Any) -> Callable[..., str]:
    """moto declares Step Functions' JSONata functions in JSONata itself, $hash and $uuid as stubs
    and $random without its seed; the evaluator provides them all natively instead."""
    return lambda variable_references: ""


def _context_references_allowed(original: Callable[[str], set[str]]) -> Callable[[str], set[str]]:
    """``$`` (and ``$$``) is JSONata's context value, as in a filter ``$states.result[$ = 1]``: AWS
    evaluates it (recorded: test_state_configuration, MAP_TASK_STATE's Output), moto refused any
    lone ``$`` while evaluating. Only the evaluation is changed; definition checks are moto's."""

    def variable_references(expression: str) -> set[str]:
        # moto's pattern captures a lone $ or $$ as a whole token; without them nothing raises.
        try:
            return original(_CONTEXT_REFERENCE.sub(" ", expression)) if expression else set()
        except IllegalJSONataVariableReference:
            # What is left is not JSONata (``$$$(``): its evaluation fails with JSONata's own words
            # as States.QueryEvaluationError (fix 15), not with this exception's name as a cause.
            return set()

    return variable_references


def _escaped_declarations(_original: Any) -> Callable[[dict[str, Any]], str]:
    return stepfunctions_jsonata.encode_declarations


def _states_by_name(_original: Any) -> Callable[..., str]:
    """Fix 86 (speed): ``$states`` is handed to the evaluator as the value itself, not as JSON text
    it parses back (stepfunctions_jsonata.encode_states); what it binds is what the text gave."""

    def encode_jsonata_variable_declarations(bindings: dict[str, Any]) -> str:
        return stepfunctions_jsonata.encode_states(bindings)

    return encode_jsonata_variable_declarations


def _query_evaluation_errors(original: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    """A JSONata expression that fails to evaluate fails its state with States.QueryEvaluationError
    (as AWS does), not States.Runtime; a JSONPath state's variable read stays States.Runtime."""

    def eval_body(self: Any, env: Any) -> None:
        try:
            original(self, env)
        except JSONataException as error:
            mode = getattr(self, "query_language_mode", None)  # StringJSONata has none: always JSONata
            if mode is not None and mode.name != _JSONATA_MODE:
                raise
            raise _query_evaluation_failure(env, self.expression, error.details) from error

    return eval_body


def _query_evaluation_failure(env: Any, expression: str, details: str | None) -> Exception:
    from moto.stepfunctions.parser.api import EvaluationFailedEventDetails, HistoryEventType
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    error_name = StatesErrorName(typ=StatesErrorNameType.StatesQueryEvaluationError)
    cause = f"The JSONata expression '{expression}' threw an error during evaluation: {details}"
    failure: Exception = FailureEventException(
        failure_event=FailureEvent(
            env=env,
            error_name=error_name,
            event_type=HistoryEventType.EvaluationFailed,
            event_details=EventDetails(
                evaluationFailedEventDetails=EvaluationFailedEventDetails(
                    cause=cause, error=error_name.error_name
                )
            ),
        )
    )
    return failure


def _strings_need_no_second_evaluation(_original: Callable[..., None]) -> Callable[..., None]:
    """Fix 58 (speed): a string result of fix 15's evaluator is a JSON string (it hands over JSON
    values only: a function would have failed the evaluation), so its ``$type`` is "string", a
    supported type. moto checked that by evaluating ``$type(<the whole expression, with every
    variable declared ahead of it>)`` a second time, parsed anew since that text differs each time:
    half of a JSONata workflow's time, for a check that always passed."""

    def validate_string_output(env: Any, expression: str, rich_jsonata_expression: str) -> None:
        return None

    return validate_string_output


# -- fix 78: a JSONata failure names the field it was specified for ---------------------------------
_VALIDATIONS = "moto.stepfunctions.parser.asl.jsonata.validations"
_ORDER = ("Items", "ItemSelector", "Arguments", "Output", "Assign", "Condition", "Seconds", "Timestamp")
_NAMED = re.compile(r"^The JSONata expression '(?P<expression>.*)' (?P<rest>returned .*)$", re.DOTALL)


def _named_field(original: Callable[..., None]) -> Callable[..., None]:
    """AWS says where a failed expression stands, in its cause ("The JSONata expression '$x'
    specified for the field 'Output/result' returned nothing (undefined).") and as the
    EvaluationFailed event's ``location`` (recorded for Output, Output/<key>, Assign/<key>,
    Arguments, Arguments/<key>); moto said neither. The field is found in the definition of the
    machine that runs (its state's fields in evaluation order, the first place the expression
    stands); where none is found (TestState, a definition the engine cannot read) moto's words stay."""
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEventException

    def validate(env: Any, expression: str, rich_jsonata_expression: str) -> None:
        try:
            original(env, expression, rich_jsonata_expression)
        except FailureEventException as failure:
            details = (failure.failure_event.event_details or {}).get("evaluationFailedEventDetails") or {}
            named = _NAMED.match(str(details.get("cause", "")))
            location = _field_of(env, expression)
            if named is not None and location is not None:
                details["cause"] = (
                    f"The JSONata expression '{named['expression']}' specified for the field "
                    f"'{location}' {named['rest']}"
                )
                details["location"] = location
            raise

    return validate


def _field_of(env: Any, expression: str) -> str | None:
    try:
        machine_arn = env.states.context_object.context_object_data["StateMachine"]["Id"]
        definition = _definition_of(str(machine_arn))
    except (KeyError, TypeError, LookupError):
        return None
    return _locations(definition).get((env.next_state_name, expression.strip())) if definition else None


def _definition_of(machine_arn: str) -> str | None:
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    _, _, _, region, account, *_ = machine_arn.split(":")
    try:
        return str(
            stepfunctions_parser_backends[account][region].describe_state_machine(machine_arn).definition
        )
    except Exception:  # no such machine (TestState): no location
        return None


@functools.lru_cache(maxsize=64)
def _locations(definition: str) -> dict[tuple[str, str], str]:
    """(state name, expression) -> the field path where the expression first stands in that state."""
    found: dict[tuple[str, str], str] = {}

    def scope(node: Any) -> None:
        for name, state in ((node or {}).get("States") or {}).items():
            if not isinstance(state, dict):
                continue
            for field in (*_ORDER, *state):
                if field in state:
                    visit(name, field, state[field])
            for branch in state.get("Branches") or []:
                scope(branch)
            for processor in ("ItemProcessor", "Iterator"):
                scope(state.get(processor))

    def visit(state: str, path: str, value: Any) -> None:
        if isinstance(value, str) and value.startswith("{%") and value.endswith("%}"):
            found.setdefault((state, value[2:-2].strip()), path)
        elif isinstance(value, dict):
            for key, item in value.items():
                visit(state, f"{path}/{key}", item)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                visit(state, f"{path}[{index}]", item)

    try:
        scope(json.loads(definition))
    except ValueError:
        return {}
    return found


_ITEM_PROCESSOR_WORKER = (
    "moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor."
    "inline_item_processor_worker:InlineItemProcessorWorker"
)


def _map_input_of_a_jsonata_map(original: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    """Fix 155: an item's ItemSelector reads the Map's input as ``$states.input``. moto took that
    input from the evaluation stack, where a JSONPath state keeps it and a JSONata state keeps
    nothing (IndexError: a Python cause). The iterations share the Map's environment, so the input
    is read, never pushed there."""

    def eval_input(self: Any, env_frame: Any) -> None:
        if self._env.stack or self._item_selector is None:
            original(self, env_frame)
            return
        map_state_input = self._env.states.get_input()
        env_frame.states.reset(input_value=map_state_input)
        env_frame.stack.append(map_state_input)
        self._item_selector.eval(env_frame)
        env_frame.states.reset(input_value=env_frame.stack[-1])

    return eval_input


PATCHES: tuple[Patch, ...] = (
    Patch(15, _JSONATA_MODULE, "_eval_jsonata", _evaluate_jsonata),
    Patch(155, _ITEM_PROCESSOR_WORKER, "_eval_input", _map_input_of_a_jsonata_map),
    Patch(78, _VALIDATIONS, "_validate_null_output", _named_field),
    Patch(78, _VALIDATIONS, "_validate_string_output", _named_field),
    Patch(78, "moto.stepfunctions.parser.models", "stepfunctions_parser_backends", keep),
    Patch(
        58,
        "moto.stepfunctions.parser.asl.jsonata.validations",
        "_validate_string_output",
        _strings_need_no_second_evaluation,
    ),
    Patch(15, _STRING_EXPRESSION_MODULE, "get_intrinsic_functions_declarations", _no_declared_functions),
    *(
        Patch(15, module, "encode_jsonata_variable_declarations", _escaped_declarations)
        for module in (_JSONATA_MODULE, "moto.stepfunctions.parser.asl.eval.variable_store")
    ),
    Patch(
        86,
        "moto.stepfunctions.parser.asl.eval.states",
        "encode_jsonata_variable_declarations",
        _states_by_name,
    ),
    Patch(15, f"{_STRING_EXPRESSION_MODULE}:StringJSONata", "_eval_body", _query_evaluation_errors),
    Patch(15, _STRING_EXPRESSION_MODULE, "extract_jsonata_variable_references", _context_references_allowed),
    Patch(15, f"{_STRING_EXPRESSION_MODULE}:StringVariableSample", "_eval_body", _query_evaluation_errors),
    Patch(
        142,
        f"{_STRING_EXPRESSION_MODULE}:StringVariableSample",
        "__init__",
        _bracketed_members_read_as_jsonpath,
    ),
    Patch(159, f"{_STRING_EXPRESSION_MODULE}:StringVariableSample", "_eval_body", _variables_read_as_paths),
    Patch(
        15,
        "moto.stepfunctions.parser.asl.component.common.error_name.failure_event",
        "FailureEventException",
        keep,
    ),
    Patch(
        15,
        "moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type:StatesErrorNameType",
        "StatesQueryEvaluationError",
        keep,
    ),
)
