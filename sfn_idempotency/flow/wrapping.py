"""Make one Task of any state machine idempotent, inline: no nested execution, so Express works.

The named Task becomes two states of the same machine::

    <Step>          Parallel, one branch: the flow of statemachines/idempotency.asl.json, its states
                    renamed "<Step>.<State>", the user's Task as its business step
    <Step>.Result   Pass: the Task's own ResultPath and OutputPath, applied once to the result

Why a Parallel: the flow's Fail states (in progress, validation, the business step's own error
after the release) then fail the *step*, where the Task's Retry and Catch see them, instead of the
whole execution; and the flow's bookkeeping lives in the branch's own state, so none of it reaches
the parent. A Parallel's result is an array, which no ResultSelector or ResultPath can unwrap, so
the branch's one output (the Task's result after its ResultSelector, or its replay) travels in one
workflow variable to ``<Step>.Result``, which places it with the Task's ResultPath and clears it.

A Task of JSONata (a JSONata machine, or a JSONata state) gets the flow of
statemachines/idempotency.jsonata.asl.json, and no Result state: a JSONata Parallel unwraps its own
result (``Output: $states.result[0]``), and the Task's ``Output`` applies inside, once.

The branch's flow is flow.step_flows': one key Lambda serves every wrapped step, each step's settings
in its ComputeKey payload, and where they are provable in its Claim.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Any

from sfn_idempotency.flow.definitions import (
    RECORD_VARIABLE,
    RESULT_VARIABLE,
    DefinitionError,
    with_lease,
)
from sfn_idempotency.flow.redrive_fence import read_run_as_first
from sfn_idempotency.flow.replays import (
    MARKER_FIELDS,
    REPLAY_STATES,
    RESULT_FIELD,
    ReplayOptionError,
    ReplayOptions,
    check_marker_place,
    checked_options,
    with_replay_options,
)
from sfn_idempotency.flow.resources import IDEMPOTENCY_FLOWS
from sfn_idempotency.flow.step_flows import (
    CLAIM_RUN_VARIABLE,
    EVENT_VARIABLE,
    KEEP_EVENT_STATE,
    StepFlowError,
    jsonata_flow,
    jsonpath_flow,
)

# The placeholders a wrapped definition needs, part of this module's API: a template fills them.
from sfn_idempotency.flow.step_flows import (
    KEY_FUNCTION_PLACEHOLDER as KEY_FUNCTION_PLACEHOLDER,
)
from sfn_idempotency.flow.step_flows import (
    TABLE_PLACEHOLDER as TABLE_PLACEHOLDER,
)
from sfn_idempotency.flow.wrapped_steps import (
    all_state_names,
    enclosing_wrapped_step,
    find_state,
    renamed_states,
    step_key_settings,
    text_outside_wrapped_steps,
    wrapped_key_prefix,
    wrapped_steps,
)
from sfn_idempotency.lambdas.compute_key.errors import ConfigurationError
from sfn_idempotency.lambdas.compute_key.settings import (
    IdempotencySettings,
    load_settings,
    settings_environment,
)

RESULT_STATE = "Result"
SEPARATOR = "."
MAX_STATE_NAME_LENGTH = 80  # Amazon States Language
MAX_VARIABLE_NAME_LENGTH = 80  # Step Functions workflow variables
DEFAULT_TIMEOUT_SECONDS = 60
# What a parent's Retry or Catch can name; a Retry naming one of them belongs to the whole step
# (retrying it computes the key again and may replay), the others to the business call.
IDEMPOTENCY_ERRORS = frozenset(
    {
        "IdempotencyAlreadyInProgressError",
        "IdempotencyValidationError",
        "IdempotencyKeyError",
        "IdempotencyPersistenceError",
        "IdempotencyInconsistentStateError",
        "IdempotencyResultTooLargeError",
        "IdempotencyEventTooLargeError",
    }
)
# States.* errors of the business step leave the flow under names of ours (an error a state
# reports must not begin with "States."): a Catch naming the original also names ours.
RENAMED_STATES_ERRORS = {"States.Timeout": "BusinessStepTimeoutError"}
OTHER_STATES_ERRORS = "BusinessStepFailedError"
STATES_WILDCARDS = frozenset({"States.ALL", "States.TaskFailed"})
JSONPATH, JSONATA = "JSONPath", "JSONata"
# Task fields the wrap moves into the flow or onto its states, per query language; anything else
# (Assign, TimeoutSecondsPath...) is refused.
_COMMON_TASK_FIELDS = frozenset(
    {"Type", "Comment", "Resource", "Retry", "Catch", "TimeoutSeconds", "HeartbeatSeconds", "Credentials"}
    | {"Next", "End", "QueryLanguage"}
)
TASK_FIELDS = {
    JSONPATH: _COMMON_TASK_FIELDS | {"Parameters", "InputPath", "ResultSelector", "ResultPath", "OutputPath"},
    JSONATA: _COMMON_TASK_FIELDS | {"Arguments", "Output"},
}
# The JSONata flow keeps its bookkeeping in these workflow variables (scoped to the Parallel's branch;
# an inner scope may not reuse an outer scope's name, so the user's definition must not use them).
JSONATA_FLOW_VARIABLES = (
    "sfnIdempotency",
    RECORD_VARIABLE,
    "sfnIdempotencyError",
    "sfnIdempotencyClaimAttempts",
    "sfnIdempotencyWaits",
    CLAIM_RUN_VARIABLE,
)
# The JSONPath flow's own workflow variables (the step's result variable besides).
JSONPATH_FLOW_VARIABLES = (CLAIM_RUN_VARIABLE, RESULT_VARIABLE, RECORD_VARIABLE, EVENT_VARIABLE)
INNER_MARKER = "marker"  # the marker's field in the flow's envelope, inside the step's branch


class WrapError(DefinitionError):
    """The definition, the state or the settings cannot be wrapped; the message says why."""


@dataclass(frozen=True)
class StepSettings:
    """What one wrapped step is configured with; the key Lambda's settings plus the variable."""

    settings: IdempotencySettings
    result_variable: str
    query_language: str = JSONPATH
    # The flow's own replay options (its marker, if any, under INNER_MARKER), and where the step
    # places the marker: a reference path (JSONPath) or a field of the Task's Output (JSONata).
    replay: ReplayOptions = dataclasses.field(default_factory=ReplayOptions)
    marker_place: str | None = None
    # The machine is Express: it is never redriven, and a synchronous execution's context has no
    # run to read (redrive_fence.for_express). A JSONata step reads the run with a default.
    express: bool = False


def wrap_state(definition: str, state_name: str, **settings: Any) -> str:
    """``definition`` (ASL, JSONPath or JSONata: the Task's own ``QueryLanguage``, else its
    machine's) with its Task ``state_name`` made idempotent inline.

    ``settings`` are :func:`step_settings`' keyword arguments: ``key_prefix`` (required),
    ``event_key_jmespath``, ``payload_validation_jmespath``, ``expires_after_seconds``,
    ``hash_function``, ``raise_on_no_key``, ``disabled`` (Powertools' POWERTOOLS_IDEMPOTENCY_DISABLED,
    written into a JSONata step's Claim; the key Lambda's own switch disables what it keys),
    ``timeout_seconds`` (default: the Task's
    ``TimeoutSeconds``, else 60), ``wait_for_in_progress`` (a duplicate of a run in progress waits
    for its result instead of failing as ``IdempotencyAlreadyInProgressError``) with
    ``max_wait_seconds`` (how long it waits at most), ``replay_marker`` (a path in the state's output,
    true on a replay and false on a first run), ``replay_hook`` (what a replay answers instead of the
    stored result: a payload template reading ``$.output`` and ``$.record``, or a ``{% … %}``
    JSONata expression reading ``$output`` and ``$record``), ``result_variable`` (the one workflow
    variable a JSONPath step uses, cleared on the way out; default ``idempotent_<state name>``) and
    ``express`` (the machine is an Express workflow: required for a JSONPath step started with
    StartSyncExecution, whose context has no ``RedriveCount`` to read). The result has the placeholders
    ``${IdempotencyKeyFunctionArn}`` and ``${IdempotencyTableName}`` besides the definition's own.
    Raises :class:`WrapError` with one clear reason.
    """
    document = _parse(definition)
    found = find_state(document, state_name)
    if found is None:
        raise WrapError(f"no state named {state_name!r} in the definition")
    states, task = found
    if wrapped_key_prefix(task) is not None:
        raise WrapError(f"state {state_name!r} is already wrapped")
    enclosing = enclosing_wrapped_step(document, state_name)
    if enclosing is not None:
        raise WrapError(f"state {state_name!r} belongs to the already wrapped step {enclosing!r}")
    if task.get("Type") != "Task":
        raise WrapError(f"state {state_name!r} is a {task.get('Type')}, not a Task")
    language = task.get("QueryLanguage") or document.get("QueryLanguage") or JSONPATH
    try:
        step = step_settings(task, state_name, query_language=language, **settings)
    except TypeError as error:  # a misspelt or missing setting
        raise WrapError(f"wrap_state: {error}") from None
    _refuse_collisions(document, state_name, step)
    replacement = inline_states(state_name, task, step)
    position = list(states).index(state_name)
    items = list(states.items())
    items[position : position + 1] = list(replacement.items())
    states.clear()
    states.update(items)
    return json.dumps(document, indent=2)


def step_settings(
    task: dict[str, Any],
    state_name: str,
    *,
    key_prefix: str,
    event_key_jmespath: str = "",
    payload_validation_jmespath: str = "",
    expires_after_seconds: int = 3600,
    hash_function: str = "md5",
    raise_on_no_key: bool = False,
    disabled: bool = False,
    timeout_seconds: int | None = None,
    wait_for_in_progress: bool = False,
    max_wait_seconds: int | None = None,
    replay_marker: str | None = None,
    replay_hook: Any = None,
    result_variable: str | None = None,
    query_language: str = JSONPATH,
    express: bool = False,
) -> StepSettings:
    """The validated settings of one wrapped step (ConfigurationError names the variable), with the
    lease its flow needs. ``query_language`` is the Task's (its own QueryLanguage, else its machine's)."""
    _refuse_unsupported_fields(state_name, task, query_language)
    task_timeout = task.get("TimeoutSeconds")
    if task_timeout is not None and not isinstance(task_timeout, int):
        raise WrapError(
            f"state {state_name!r} has a TimeoutSeconds that is not a number ({task_timeout!r}): the "
            "lease must be known when the step is wrapped; give the timeout instead"
        )
    if timeout_seconds is not None and task_timeout is not None and timeout_seconds != task_timeout:
        raise WrapError(
            f"state {state_name!r} has TimeoutSeconds {task_timeout}, and the timeout given is "
            f"{timeout_seconds}: give one"
        )
    timeout = timeout_seconds or task_timeout or DEFAULT_TIMEOUT_SECONDS
    try:
        if replay_marker is not None:
            check_marker_place(task, replay_marker, query_language)
        replay = checked_options(
            INNER_MARKER if replay_marker is not None else None, replay_hook, query_language
        )
    except ReplayOptionError as error:
        raise WrapError(f"state {state_name!r}: {error}") from None
    try:
        settings = load_settings(
            settings_environment(
                key_prefix=key_prefix,
                event_key_jmespath=event_key_jmespath,
                payload_validation_jmespath=payload_validation_jmespath,
                raise_on_no_key=raise_on_no_key,
                disabled=disabled,
                expires_after_seconds=expires_after_seconds,
                hash_function=hash_function,
                timeout_seconds=timeout,
                wait_for_in_progress=wait_for_in_progress,
                **({"max_wait_seconds": max_wait_seconds} if max_wait_seconds else {}),
            )
        )
        # The lease covers the business call's own Retry, as the wrapped flow runs it.
        settings = with_lease(settings, json.dumps(_flow(task, settings, query_language, replay)))
    except ConfigurationError as error:
        raise WrapError(f"state {state_name!r}: {error}") from None
    if query_language == JSONATA and result_variable is not None:
        raise WrapError(f"state {state_name!r} is JSONata: its step needs no result variable")
    variable = result_variable or default_result_variable(state_name)
    if not re.fullmatch(r"[^\W\d]\w*", variable) or len(variable) > MAX_VARIABLE_NAME_LENGTH:
        raise WrapError(
            f"result variable {variable!r} is not a workflow variable name (an identifier of at most "
            f"{MAX_VARIABLE_NAME_LENGTH} characters)"
        )
    return StepSettings(
        settings=settings,
        result_variable=variable,
        query_language=query_language,
        replay=replay,
        marker_place=replay_marker,
        express=express,
    )


# IdempotencySettings fields that wrap_state takes as its keyword arguments, under the same names.
STEP_FIELDS = (
    "key_prefix",
    "event_key_jmespath",
    "payload_validation_jmespath",
    "expires_after_seconds",
    "hash_function",
    "raise_on_no_key",
    "disabled",
    "timeout_seconds",
    "wait_for_in_progress",
    "max_wait_seconds",
)


def step_fields(settings: IdempotencySettings) -> dict[str, Any]:
    """``settings`` as wrap_state's keyword arguments."""
    return {field: getattr(settings, field) for field in STEP_FIELDS}


def settings_of_step(definition: str, state_name: str) -> IdempotencySettings:
    """The settings a wrapped step's ComputeKey carries (the lease included)."""
    found = find_state(_parse(definition), state_name)
    if found is None or wrapped_key_prefix(found[1]) is None:
        raise WrapError(f"no wrapped step named {state_name!r} in the definition")
    return load_settings(step_key_settings(found[1]["Branches"][0]))


def default_result_variable(state_name: str) -> str:
    return ("idempotent_" + re.sub(r"\W", "_", state_name))[:MAX_VARIABLE_NAME_LENGTH]


def inline_states(state_name: str, task: dict[str, Any], step: StepSettings) -> dict[str, dict[str, Any]]:
    """The two states that replace the Task ``state_name`` (see the module's docstring), for the
    ``step`` that step_settings validated."""
    outer_retry, _ = _split_retry(task.get("Retry", []))
    flow = _flow(task, step.settings, step.query_language, step.replay)
    names = {name: f"{state_name}{SEPARATOR}{name}" for name in flow["States"]}
    too_long = sorted(name for name in names.values() if len(name) > MAX_STATE_NAME_LENGTH)
    if too_long or len(f"{state_name}{SEPARATOR}{RESULT_STATE}") > MAX_STATE_NAME_LENGTH:
        raise WrapError(
            f"state name {state_name!r} is too long to wrap: the flow's states would be named like "
            f"{(too_long or [state_name + SEPARATOR + RESULT_STATE])[0]!r}, over "
            f"{MAX_STATE_NAME_LENGTH} characters"
        )
    branch = {"StartAt": names[flow["StartAt"]], "States": renamed_states(flow["States"], names)}
    if step.express:
        read_run_as_first(branch)
    if step.query_language == JSONATA:
        return {state_name: _jsonata_step(task, step, branch, outer_retry)}
    result_name = f"{state_name}{SEPARATOR}{RESULT_STATE}"
    parallel: dict[str, Any] = {
        "Type": "Parallel",
        "Comment": _comment(task, step.settings),
        "Branches": [branch],
        # A Parallel's result is [branch output]: carried to the Result state in one variable.
        "Assign": {f"{step.result_variable}.$": "$[0]"},
        "ResultPath": None,
    }
    if step.marker_place is not None:
        # The branch's output is the flow's envelope: the marker is placed here, the result travels
        # on in the variable (the whole envelope: Assign reads the raw result, before the selector).
        parallel["ResultSelector"] = {f"{field}.$": f"$[0].{INNER_MARKER}.{field}" for field in MARKER_FIELDS}
        parallel["ResultPath"] = step.marker_place
    parallel.update(_step_error_handling(task, outer_retry))
    parallel["Next"] = result_name
    result: dict[str, Any] = {
        "Type": "Pass",
        "Comment": f"The result of {state_name} (or its replay), placed by the Task's own ResultPath.",
        "InputPath": f"${step.result_variable}"
        + (f".{RESULT_FIELD}" if step.marker_place is not None else ""),
        "Assign": {step.result_variable: None},
    }
    for field in ("ResultPath", "OutputPath"):
        if field in task:
            result[field] = task[field]
    result.update(_continuation(task))
    return {state_name: parallel, result_name: result}


def _step_error_handling(task: dict[str, Any], outer_retry: list[dict[str, Any]]) -> dict[str, Any]:
    """The Retry and Catch of the whole step: the Task's Catch, and its Retry on idempotency errors."""
    handling: dict[str, Any] = {}
    if outer_retry:
        handling["Retry"] = outer_retry
    if "Catch" in task:
        handling["Catch"] = [
            {**catcher, "ErrorEquals": outer_error_names(catcher.get("ErrorEquals", []))}
            for catcher in task["Catch"]
        ]
    return handling


def _continuation(task: dict[str, Any]) -> dict[str, Any]:
    """Where the Task went on: its Next, or its End."""
    return {"End": True} if task.get("End") else {"Next": task["Next"]}


def _jsonata_step(
    task: dict[str, Any], step: StepSettings, branch: dict[str, Any], outer_retry: list[dict[str, Any]]
) -> dict[str, Any]:
    """A JSONata Parallel unwraps its one branch's output itself: no Result state, no variable."""
    parallel: dict[str, Any] = {"Type": "Parallel", "Comment": _comment(task, step.settings)}
    if "QueryLanguage" in task:  # a JSONata state in a JSONPath machine: the flow's states say so too
        parallel["QueryLanguage"] = JSONATA
        for state in branch["States"].values():
            state["QueryLanguage"] = JSONATA
    parallel["Branches"] = [branch]
    parallel["Output"] = "{% $states.result[0] %}"
    if step.marker_place is not None:  # beside the fields of the Task's Output (checked: an object)
        parallel["Output"] = (
            f"{{% $merge([$states.result[0].{RESULT_FIELD}, "
            f"{{'{step.marker_place}': $states.result[0].{INNER_MARKER}}}]) %}}"
        )
    parallel.update(_step_error_handling(task, outer_retry))
    parallel.update(_continuation(task))
    return parallel


def _flow(
    task: dict[str, Any], settings: IdempotencySettings, query_language: str, replay: ReplayOptions
) -> dict[str, Any]:
    """The idempotency flow with ``task`` as its business step, ``settings`` in its ComputeKey and
    ``replay``'s marker and hook."""
    _, inner_retry = _split_retry(task.get("Retry", []))
    build = jsonata_flow if query_language == JSONATA else jsonpath_flow
    try:
        flow = build(task, settings, inner_retry)
    except StepFlowError as error:
        raise WrapError(str(error)) from None
    flow = with_replay_options(flow, replay, query_language)
    for state in flow["States"].values():
        arguments = state.get("Arguments", state.get("Parameters"))
        if isinstance(arguments, dict) and "TableName" in arguments:
            arguments["TableName"] = f"${{{TABLE_PLACEHOLDER}}}"
    return flow


def _split_retry(retriers: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(retriers of the whole step: the idempotency errors, retriers of the business call: the rest)."""
    outer, inner = [], []
    for retrier in retriers:
        names = retrier.get("ErrorEquals", [])
        ours = [name for name in names if name in IDEMPOTENCY_ERRORS]
        theirs = [name for name in names if name not in IDEMPOTENCY_ERRORS]
        if ours:
            outer.append({**retrier, "ErrorEquals": ours})
        if theirs:
            inner.append({**retrier, "ErrorEquals": theirs})
    return outer, inner


def outer_error_names(names: list[str]) -> list[str]:
    """A Catch's ErrorEquals for the step: a ``States.*`` name of the business step also names what
    the flow reports it as (a state may not report ``States.*``)."""
    names = list(names)
    for name in list(names):
        if name.startswith("States.") and name not in STATES_WILDCARDS:
            renamed = RENAMED_STATES_ERRORS.get(name, OTHER_STATES_ERRORS)
            if renamed not in names:
                names.append(renamed)
    return names


def _refuse_unsupported_fields(state_name: str, task: dict[str, Any], query_language: str) -> None:
    supported = TASK_FIELDS.get(query_language)
    if supported is None:
        raise WrapError(f"state {state_name!r} has the unknown QueryLanguage {query_language!r}")
    unknown = sorted(set(task) - supported)
    if unknown:
        raise WrapError(
            f"state {state_name!r} has {', '.join(unknown)}, which an inline idempotent step of "
            f"{query_language} does not support (supported: {', '.join(sorted(supported - {'Type'}))})"
        )


def _comment(task: dict[str, Any], settings: IdempotencySettings) -> str:
    own = task.get("Comment")
    base = f"sfn-idempotency inline step (key prefix {settings.key_prefix!r})"
    return f"{base}: {own}" if own else base


# -- reading the user's definition -----------------------------------------------------------------
def _parse(definition: str) -> dict[str, Any]:
    try:
        document = json.loads(definition)
    except json.JSONDecodeError as error:
        raise WrapError(f"the definition is not JSON: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("States"), dict):
        raise WrapError("the definition has no States object")
    return document


def _refuse_collisions(document: dict[str, Any], state_name: str, step: StepSettings) -> None:
    for other, prefix in wrapped_steps(document).items():
        if prefix == step.settings.key_prefix:
            raise WrapError(
                f"key prefix {prefix!r} is already used by the wrapped step {other!r} in this "
                "definition: give each step its own"
            )
    taken = all_state_names(document) - {state_name}
    names = [*_flow_state_names(step.query_language), *REPLAY_STATES]
    planned = {f"{state_name}{SEPARATOR}{name}" for name in names}
    if step.query_language == JSONPATH:
        planned.add(f"{state_name}{SEPARATOR}{RESULT_STATE}")
    clashes = sorted(planned & taken)
    if clashes:
        raise WrapError(f"the definition already has states named {clashes}: rename them or the Task")
    text = text_outside_wrapped_steps(document)
    variables = (
        JSONATA_FLOW_VARIABLES
        if step.query_language == JSONATA
        else (step.result_variable, *JSONPATH_FLOW_VARIABLES)
    )
    for variable in variables:
        if re.search(r'(\$|")' + re.escape(variable) + r"\b", text):
            raise WrapError(
                f"the definition already uses the variable {variable!r}, which the inline step "
                "assigns: rename yours"
                + (" or name another with result_variable" if step.query_language == JSONPATH else "")
            )


def _flow_state_names(query_language: str) -> list[str]:
    names = list(json.loads(IDEMPOTENCY_FLOWS[query_language].read_text(encoding="utf-8"))["States"])
    return [*names, KEEP_EVENT_STATE] if query_language == JSONPATH else names
