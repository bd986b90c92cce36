"""The idempotency flow around a user's Task, as wrap_state puts it in the Task's Parallel: the Task
as its business step, the step's settings written into its ComputeKey payloads and, where they are
provable, its Claim. One key Lambda and one table serve every wrapped step of a definition.

A JSONata step claims by the provable key first, as the standalone flow does. A JSONPath step keeps
its input as it came in a variable first (KeepEvent): its Claim is JSONata, which writes numbers its
own way (5.0 as 5), and its business call and key Lambda read the event as it came.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from sfn_idempotency.flow.definitions import (
    BUSINESS_STATES,
    EXECUTE_STATE,
    DefinitionError,
    with_business_step,
)
from sfn_idempotency.flow.provable_key import (
    LAMBDA_KEYED_START,
    is_provable,
    with_provable_key,
    without_provable_key,
)
from sfn_idempotency.flow.redrive_fence import RUN_PATH, fence_jsonata
from sfn_idempotency.flow.resources import IDEMPOTENCY_FLOWS
from sfn_idempotency.lambdas.compute_key.settings import IdempotencySettings

JSONPATH, JSONATA = "JSONPath", "JSONata"
# The placeholders a wrapped definition needs: one key Lambda and one table for every wrapped step.
KEY_FUNCTION_PLACEHOLDER = "IdempotencyKeyFunctionArn"
TABLE_PLACEHOLDER = "IdempotencyTableName"
COMPUTE_KEY_STATE = LAMBDA_KEYED_START
RECOMPUTE_KEY_STATE = "RecomputeKey"  # ComputeKey again, after the redrive fence answered
KEY_FUNCTION_IN_FLOW = "${ComputeKeyFunctionArn}"
CLAIM_RUN_VARIABLE = "sfnIdempotencyClaimRun"  # the run that made the claim: the redrive fence's
# A JSONPath step's input as it came, kept before its JSONata Claim (which writes numbers as JSONata
# writes them, 5.0 as 5): the business call, and the key Lambda where the key is not provable, read it.
EVENT_VARIABLE = "sfnIdempotencyEvent"
KEEP_EVENT_STATE = "KeepEvent"
CLAIM_STATE = "Claim"
# The key Lambda logs each key with the execution that asked for it: an outcome's key is findable.
EXECUTION_SELECTOR = {"execution.$": "$$.Execution.Id"}


class StepFlowError(DefinitionError):
    """The Task cannot be the flow's business step."""


def jsonata_flow(
    task: dict[str, Any], settings: IdempotencySettings, inner_retry: list[dict[str, Any]]
) -> dict[str, Any]:
    """The JSONata flow: its states pass the Task's input through to the business state, where the
    Task's own Arguments and Output run unchanged (``$states.input`` is what the Task would see)."""
    flow = with_provable_key(json.loads(IDEMPOTENCY_FLOWS[JSONATA].read_text(encoding="utf-8")), settings)
    states = flow["States"]
    flow_execute = copy.deepcopy(states[EXECUTE_STATE])
    for name in BUSINESS_STATES:
        business = states[name]
        for field in ("Arguments", "Output", "Retry"):
            business.pop(field, None)
        business["Resource"] = task["Resource"]
        business.update(
            {
                field: copy.deepcopy(task[field])
                for field in ("Arguments", "Output", "HeartbeatSeconds", "Credentials")
                if field in task
            }
        )
        if inner_retry:
            business["Retry"] = inner_retry
        business["TimeoutSeconds"] = settings.timeout_seconds
    fence_jsonata(states[EXECUTE_STATE], flow_execute)
    for name in (COMPUTE_KEY_STATE, RECOMPUTE_KEY_STATE):
        states[name]["Arguments"] = {
            "FunctionName": f"${{{KEY_FUNCTION_PLACEHOLDER}}}",
            "Payload": {
                "event": "{% $states.input %}",
                "execution": "{% $states.context.Execution.Id %}",
                "settings": settings.to_environment(),
            },
        }
    return _with_the_step_s_key_function(flow)


def jsonpath_flow(
    task: dict[str, Any], settings: IdempotencySettings, inner_retry: list[dict[str, Any]]
) -> dict[str, Any]:
    """The JSONPath flow. Where the settings are provable, it claims by the provable key as the
    standalone flow does, after KeepEvent keeps the Task's effective input in a variable: the
    business call and the key Lambda read the event as it came, never as the JSONata Claim wrote it.
    Elsewhere the ComputeKey Lambda keys every event and hands it on."""
    provable = is_provable(settings)
    event = f"${EVENT_VARIABLE}" if provable else "$.event"
    business: dict[str, Any] = {
        field: task[field] for field in ("Resource", "Parameters", "ResultSelector") if field in task
    }
    try:
        flow: dict[str, Any] = json.loads(
            with_business_step(
                IDEMPOTENCY_FLOWS[JSONPATH].read_text(encoding="utf-8"),
                business,
                # The business call sees what the plain Task would have: the event, after its InputPath.
                input_path=event,
                extra_fields={
                    field: task[field] for field in ("HeartbeatSeconds", "Credentials") if field in task
                },
            )
        )
    except DefinitionError as error:
        raise StepFlowError(str(error)) from None
    flow = _claimed_from_the_kept_event(flow, task, settings) if provable else without_provable_key(flow)
    states = flow["States"]
    for name in BUSINESS_STATES:
        business_state = states[name]
        # The Task's own Retry, and no other (the flow's default is for a Lambda).
        business_state.pop("Retry", None)
        if inner_retry:
            business_state["Retry"] = inner_retry
        # A *Path field reads the effective input, which is now the event: the timeout is fixed here.
        del business_state["TimeoutSecondsPath"]
        business_state["TimeoutSeconds"] = settings.timeout_seconds
    states[COMPUTE_KEY_STATE]["Parameters"] = {
        "FunctionName": f"${{{KEY_FUNCTION_PLACEHOLDER}}}",
        "Payload": {
            **({"event.$": event} if provable else _event_selector(task)),
            **EXECUTION_SELECTOR,
            "settings": settings.to_environment(),
        },
    }
    # After the fence: the business call's input (its InputPath applied).
    states[RECOMPUTE_KEY_STATE]["Parameters"] = {
        "FunctionName": f"${{{KEY_FUNCTION_PLACEHOLDER}}}",
        "Payload": {"event.$": event, **EXECUTION_SELECTOR, "settings": settings.to_environment()},
    }
    return _with_the_step_s_key_function(flow)


def _claimed_from_the_kept_event(
    flow: dict[str, Any], task: dict[str, Any], settings: IdempotencySettings
) -> dict[str, Any]:
    """``flow`` starting at KeepEvent, a Pass that keeps the Task's effective input (its InputPath
    applied) in a variable, then Claim, which keys that variable by the provable key."""
    input_path = task.get("InputPath", "$")
    kept: dict[str, Any] = {EVENT_VARIABLE: {}} if input_path is None else {f"{EVENT_VARIABLE}.$": input_path}
    # The run, read as Execute's fence reads it: a step built for a Standard machine and run
    # synchronously in an Express one (whose context has no RedriveCount) fails here, before any
    # claim, instead of at its business call with a claim left behind. Claim assigns it again.
    kept[f"{CLAIM_RUN_VARIABLE}.$"] = RUN_PATH
    flow = with_provable_key(flow, settings)
    claim = json.dumps(flow["States"][CLAIM_STATE]).replace("$states.input", f"${EVENT_VARIABLE}")
    flow["States"] = {
        KEEP_EVENT_STATE: {
            "Type": "Pass",
            "Comment": "The step's input as it came (its InputPath applied), kept for the business call "
            "and the key Lambda: Claim is JSONata, which writes numbers its own way (5.0 as 5). The run "
            "is read here as the fence reads it, so a step that cannot read it fails before any claim.",
            "Assign": kept,
            "Next": CLAIM_STATE,
        },
        **flow["States"],
        CLAIM_STATE: json.loads(claim),
    }
    flow["StartAt"] = KEEP_EVENT_STATE
    return flow


def _with_the_step_s_key_function(flow: dict[str, Any]) -> dict[str, Any]:
    """The fence calls the key Lambda too: the shared one of every wrapped step."""
    text = json.dumps(flow).replace(KEY_FUNCTION_IN_FLOW, f"${{{KEY_FUNCTION_PLACEHOLDER}}}")
    return json.loads(text)  # type: ignore[no-any-return]


def _event_selector(task: dict[str, Any]) -> dict[str, Any]:
    """The ComputeKey payload's event: the Task's effective input (its InputPath applied)."""
    input_path = task.get("InputPath", "$")
    if input_path is None:  # "InputPath": null makes the effective input {}
        return {"event": {}}
    return {"event.$": input_path}
