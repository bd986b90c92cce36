"""Definitions: the checks CreateStateMachine, UpdateStateMachine and ValidateStateMachineDefinition
share, so the three can never disagree (fix 28).

Each check answers AWS's diagnostics (code, message, location) as recorded: the fields a definition
needs, a transition to a state that does not exist, a JSONPath state under a JSONata machine,
``.sync`` and ``.waitForTaskToken`` in an Express machine; then moto's own parser, the one that runs
the definition, has the last word.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sfn_idempotency.local.compat.patching import Patch, add

_PARSER_MODELS = "moto.stepfunctions.parser.models:StepFunctionsParserBackend"
_RESPONSE_CLASS = "moto.stepfunctions.responses:StepFunctionResponse"
SCHEMA = "SCHEMA_VALIDATION_FAILED"
MISSING_TARGET = "MISSING_TRANSITION_TARGET"
INVALID_JSON = "INVALID_JSON_DESCRIPTION"
_EXPRESS_UNSUPPORTED = (".waitForTaskToken", ".sync:2", ".sync")  # longest suffix first
_REQUIRED = ("StartAt", "States")
STATE_TYPES = ("Task", "Wait", "Pass", "Succeed", "Fail", "Choice", "Parallel", "Map")  # AWS's order
_ACTIVITY_ARN = re.compile(r"^arn:[\w-]+:states:[\w-]+:\d{12}:activity:")
# RFC 3339's date-time, which a Wait's Timestamp must be (recorded), with the documented further
# restrictions: an uppercase T between date and time, an uppercase Z for no offset.
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
# What moto's parser says of a Task resource it does not know.
_UNKNOWN_RESOURCE = re.compile(r"The resource provided (\S+) not recognized\. ([^'\]]*)")


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    location: str
    severity: str = "ERROR"
    worded: bool = False  # the message is the whole refusal, as the parser words it

    def as_answer(self) -> dict[str, str]:
        return {
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "location": self.location,
        }

    def as_refusal(self) -> str:
        """InvalidDefinition's message, as CreateStateMachine words it (recorded): a structural
        diagnostic in its code-message-location form; what the parser refuses in the parser's
        words (``Error=ValueError Args=['Label cannot be empty'] in definition '...'``)."""
        if self.worded:
            return self.message
        return f"Invalid State Machine Definition: '{self.code}: {self.message} at {self.location}'"


def diagnose(definition: str, machine_type: str = "STANDARD") -> list[Diagnostic]:
    """Every error found in ``definition`` for a machine of ``machine_type`` (empty: it is valid)."""
    try:
        document = json.loads(definition)
    except ValueError as error:
        return [Diagnostic(INVALID_JSON, f"Definition is not valid JSON: {error}", "/")]
    if not isinstance(document, dict):
        return [Diagnostic(SCHEMA, "A definition is a JSON object", "/")]
    found = list(_structure(document, "", machine_type, document.get("QueryLanguage", "JSONPath")))
    return found or _parsed_by_moto(definition)


def _structure(scope: dict[str, Any], at: str, machine_type: str, language: str) -> Iterator[Diagnostic]:
    """Diagnostics of one scope (the machine, a Parallel branch, a Map's item processor), deep first."""
    missing = [field for field in _REQUIRED if field not in scope]
    if missing:
        yield Diagnostic(SCHEMA, f"These fields are required: [{', '.join(missing)}]", at or "/")
        return
    states = scope["States"]
    if not isinstance(states, dict):
        yield Diagnostic(SCHEMA, "States is an object", f"{at}/States")
        return
    if scope["StartAt"] not in states:
        yield Diagnostic(MISSING_TARGET, f"Missing 'StartAt' target: {scope['StartAt']}", f"{at}/StartAt")
    for name, state in states.items():
        if not isinstance(state, dict):
            continue
        where = f"{at}/States/{name}"
        if "Type" in state and state["Type"] not in STATE_TYPES:
            yield unknown_state_type(where)
            continue
        if language == "JSONata" and state.get("QueryLanguage") == "JSONPath":
            yield Diagnostic(
                SCHEMA,
                "'QueryLanguage' can not be 'JSONPath' if set to 'JSONata' for whole state machine",
                where,
            )
        for field, target in _transitions(state):
            if target not in states:
                yield Diagnostic(
                    MISSING_TARGET,
                    f"Missing '{field.rsplit('/', 1)[-1]}' target: {target}",
                    f"{where}/{field}",
                )
        resource = str(state.get("Resource", ""))
        unsupported = next((s for s in _EXPRESS_UNSUPPORTED if resource.endswith(s)), None)
        if machine_type == "EXPRESS" and unsupported is not None:
            # (AWS's message for a callback ends with a space, for a .sync not: both recorded)
            ending = " " if unsupported == ".waitForTaskToken" else ""
            yield Diagnostic(
                SCHEMA,
                f"Express state machine does not support '{unsupported}' service integration{ending}",
                f"{where}/Resource",
            )
        state_language = state.get("QueryLanguage", language)
        yield from _required_fields(state, where)
        if state_language == "JSONPath":
            yield from _paths_that_are_not_jsonpath(state, where)
        if state.get("Type") == "Wait" and not _is_timestamp(state.get("Timestamp"), state_language):
            yield Diagnostic(SCHEMA, "String does not match RFC3339 timestamp", f"{where}/Timestamp")
        if machine_type == "EXPRESS" and _ACTIVITY_ARN.match(resource):
            yield Diagnostic(
                SCHEMA, "Express state machine does not support Activity ARN", f"{where}/Resource"
            )
        # The rule is the whole machine's: a JSONPath state inside a JSONata Map of a JSONPath
        # machine is accepted (recorded: test_sfn_api_validation VALID_QUERY_LANGUAGE_PASS).
        inner = language
        for index, branch in enumerate(state.get("Branches") or []):
            if isinstance(branch, dict):
                yield from _structure(branch, f"{where}/Branches[{index}]", machine_type, inner)
        for processor in ("ItemProcessor", "Iterator"):
            if isinstance(state.get(processor), dict):
                yield from _structure(state[processor], f"{where}/{processor}", machine_type, inner)


# The field each state type cannot do without, that moto's parser did not ask for (a Choice) or
# refused in its own Python words (a Parallel: its props' repr).
_REQUIRED_FIELDS = {"Choice": "Choices", "Parallel": "Branches"}


def _required_fields(state: dict[str, Any], where: str) -> Iterator[Diagnostic]:
    """AWS's words for a missing field and an empty list (recorded for a Credentials' RoleArn and
    a Parallel's Branches); moto accepted a Choice without rules and failed each execution with
    Python's AttributeError, and refused Credentials without a RoleArn in its parser's words."""
    credentials = state.get("Credentials")
    if isinstance(credentials, dict) and not {"RoleArn", "RoleArn.$"} & credentials.keys():
        yield Diagnostic(SCHEMA, "The field 'RoleArn' is required but was missing", f"{where}/Credentials")
    field = _REQUIRED_FIELDS.get(str(state.get("Type")))
    if field is None:
        return
    if field not in state:
        yield Diagnostic(SCHEMA, f"The field '{field}' is required but was missing", where)
    elif state[field] == []:
        yield Diagnostic(SCHEMA, "Value cannot be empty", f"{where}/{field}")


# A JSONPath state's fields that hold a path, and the fields whose ``.$`` members hold one.
_PATH_FIELDS = ("InputPath", "OutputPath", "ResultPath", "ItemsPath")
_TEMPLATE_FIELDS = ("Parameters", "ResultSelector", "ItemSelector", "Assign")
# A path's head: the context object's ($$), a variable's ($name), or the state's data ($).
_PATH_HEAD = re.compile(r"^\$(\$|[A-Za-z_][A-Za-z0-9_]*)?")


def _paths_that_are_not_jsonpath(state: dict[str, Any], where: str) -> Iterator[Diagnostic]:
    """Paths AWS refuses when the machine is created (recorded for a ``.$`` member: "must be a
    valid JSONPath or a valid intrinsic function call", at the object that holds it), read by the
    JSONPath parser that runs them; moto accepted them and failed each execution with the parser's
    Python exception as the cause. Intrinsic functions are the interpreter's parser's to judge."""
    for field in _PATH_FIELDS:
        value = state.get(field)
        if isinstance(value, str) and not _is_jsonpath(value):
            yield Diagnostic(SCHEMA, f"The value for the field '{field}' must be a valid JSONPath", where)
    for field in _TEMPLATE_FIELDS:
        yield from _template_paths(state.get(field), f"{where}/{field}")


def _template_paths(template: Any, at: str) -> Iterator[Diagnostic]:
    if isinstance(template, list):
        for index, item in enumerate(template):
            yield from _template_paths(item, f"{at}[{index}]")
    if not isinstance(template, dict):
        return
    for key, value in template.items():
        if (
            key.endswith(".$")
            and isinstance(value, str)
            and value.startswith("$")
            and not _is_jsonpath(value)
        ):
            yield Diagnostic(
                SCHEMA,
                f"The value for the field '{key}' must be a valid JSONPath or a valid intrinsic function call",
                at,
            )
        elif not key.endswith(".$"):
            yield from _template_paths(value, f"{at}/{key}")


def _is_jsonpath(path: str) -> bool:
    """Whether the JSONPath parser the interpreter reads paths with reads ``path`` (its head made
    the state's data's: ``$$.Execution.Id`` and ``$order.id`` are paths into another document)."""
    from jsonpath_ng.ext.parser import parse

    head = _PATH_HEAD.match(path)
    if head is None:
        return False
    try:
        parse("$" + path[head.end() :])
    except Exception:  # the parser's lexer and parser errors, of several classes
        return False
    return True


def unknown_state_type(where: str) -> Diagnostic:
    """A state whose Type is none of Step Functions' (recorded, for CreateStateMachine and TestState)."""
    return Diagnostic(
        SCHEMA,
        f"The field 'Type' should have one of these values: [{', '.join(STATE_TYPES)}]",
        f"{where}/Type",
    )


def _is_timestamp(value: Any, language: str) -> bool:
    """A Wait's literal Timestamp is an RFC 3339 date-time with a zone, a real date and time
    (recorded: no ``T``, no zone, 2016-13-05, 25:29:29, and "{% 'date' %}" in a JSONPath state are
    refused); a JSONata state's expression is judged when it runs."""
    if not isinstance(value, str) or (language == "JSONata" and value.startswith("{%")):
        return True
    if not _RFC3339.match(value):
        return False
    try:
        datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _transitions(state: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(field path, target) of every transition a state declares."""
    if isinstance(state.get("Next"), str):
        yield "Next", state["Next"]
    if isinstance(state.get("Default"), str):
        yield "Default", state["Default"]
    for index, choice in enumerate(state.get("Choices") or []):
        if isinstance(choice, dict) and isinstance(choice.get("Next"), str):
            yield f"Choices[{index}]/Next", choice["Next"]
    for index, catcher in enumerate(state.get("Catch") or []):
        if isinstance(catcher, dict) and isinstance(catcher.get("Next"), str):
            yield f"Catch[{index}]/Next", catcher["Next"]


def _parsed_by_moto(definition: str) -> list[Diagnostic]:
    from moto.stepfunctions.parser.api import InvalidDefinition
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    try:
        StepFunctionsParserBackend._validate_definition(definition=definition)
    except InvalidDefinition as refused:
        unknown = _UNKNOWN_RESOURCE.search(str(refused.message))
        if unknown is not None:
            # As AWS words it (recorded): a schema failure at the state's Resource.
            resource, rest = unknown.groups()
            message = f"The resource provided {resource} is not recognized. {rest.strip()}"
            return [Diagnostic(SCHEMA, message, _resource_location(json.loads(definition), resource))]
        return [Diagnostic(SCHEMA, str(refused.message), "/", worded=True)]
    return []


def _resource_location(scope: dict[str, Any], resource: str, at: str = "") -> str:
    """Where the first state whose Resource is ``resource`` stands (branches and processors too)."""
    for name, state in (scope.get("States") or {}).items():
        if not isinstance(state, dict):
            continue
        where = f"{at}/States/{name}"
        if state.get("Resource") == resource:
            return f"{where}/Resource"
        inner = [(f"{where}/Branches[{i}]", b) for i, b in enumerate(state.get("Branches") or [])]
        inner += [
            (f"{where}/{p}", state[p])
            for p in ("ItemProcessor", "Iterator")
            if isinstance(state.get(p), dict)
        ]
        for path, nested in inner:
            found = _resource_location(nested, resource, path)
            if found != "/":
                return found
    return "/"


def _refused(definition: str, machine_type: str) -> None:
    from moto.stepfunctions.parser.api import InvalidDefinition

    found = diagnose(definition, machine_type)
    if found:
        raise InvalidDefinition(found[0].as_refusal())


def _checked_create(original: Callable[..., Any]) -> Callable[..., Any]:
    def create_state_machine(self: Any, name: str, definition: str, roleArn: str, **kwargs: Any) -> Any:
        _refused(definition, kwargs.get("sm_type") or "STANDARD")
        return original(self, name, definition, roleArn, **kwargs)

    return create_state_machine


def _checked_update(original: Callable[..., Any]) -> Callable[..., Any]:
    def update_state_machine(
        self: Any, arn: str, definition: str | None = None, *args: Any, **kwargs: Any
    ) -> Any:
        if definition is not None:
            _refused(definition, self.describe_state_machine(arn).type)
        return original(self, arn, definition, *args, **kwargs)

    return update_state_machine


def _validate_state_machine_definition(self: Any) -> Any:
    """ValidateStateMachineDefinition: ``result`` OK or FAIL, the ``diagnostics`` at or above
    ``severity`` (ERROR by default; every diagnostic the engine finds is an error), at most
    ``maxResults`` of them (100 by default; 0 too), and whether the list was ``truncated``."""
    from moto.core.responses import ActionResult

    found = diagnose(self._get_param("definition"), self._get_param("type") or "STANDARD")
    limit = self._get_int_param("maxResults") or 100
    return ActionResult(
        {
            "result": "FAIL" if any(d.severity == "ERROR" for d in found) else "OK",
            "diagnostics": [d.as_answer() for d in found[:limit]],
            "truncated": len(found) > limit,
        }
    )


def install_validate_state_machine_definition() -> None:
    add(_RESPONSE_CLASS, "validate_state_machine_definition", _validate_state_machine_definition)


PATCHES: tuple[Patch, ...] = (
    Patch(28, _PARSER_MODELS, "create_state_machine", _checked_create),
    Patch(28, _PARSER_MODELS, "update_state_machine", _checked_update),
)
