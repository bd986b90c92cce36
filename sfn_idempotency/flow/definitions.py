"""ASL definitions: ``${Name}`` placeholders filled with CDK's definition_substitutions semantics, and
the idempotency flow around a business step other than a Lambda."""

from __future__ import annotations

import copy
import functools
import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sfn_idempotency.flow.redrive_fence import fence_jsonpath, is_function, payload_selector
from sfn_idempotency.flow.resources import IDEMPOTENCY_FLOWS
from sfn_idempotency.lambdas.compute_key.settings import IdempotencySettings, load_settings

PLACEHOLDER = re.compile(r"\$\{([A-Za-z][A-Za-z0-9_]*)\}")
# How the workflows that nest the idempotent one (order_workflow, sqs_batch) name their child.
NESTED_WORKFLOW_PLACEHOLDER = "IdempotencyStateMachineArn"
# The two states of the idempotency flow that run the business step.
BUSINESS_STATES = ("Execute", "ExecuteWithoutRecord")
BUSINESS_TASK_FIELDS = frozenset({"Resource", "Parameters", "ResultSelector", "Retry"})
# Workflow variables of the flow: the JSONPath flow's business result (``{"value": result}``), kept
# out of the state's data, and the record Read brought back (both flavours).
RESULT_VARIABLE = "sfnIdempotencyResult"
RECORD_VARIABLE = "sfnIdempotencyRecord"


class DefinitionError(ValueError):
    """The ASL and its substitutions or business step do not fit together."""


def placeholders(definition: str) -> set[str]:
    return set(PLACEHOLDER.findall(definition))


def render(template: str | Path, substitutions: Mapping[str, str]) -> str:
    """The definition with every placeholder replaced; a missing or unused name is an error."""
    text = template.read_text(encoding="utf-8") if isinstance(template, Path) else template
    needed = placeholders(text)
    missing = sorted(needed - substitutions.keys())
    unused = sorted(substitutions.keys() - needed)
    if missing or unused:
        source = template.name if isinstance(template, Path) else "definition"
        raise DefinitionError(f"{source}: missing substitutions {missing}, unused substitutions {unused}")
    # Values land inside JSON strings: escape them as JSON would.
    rendered = PLACEHOLDER.sub(lambda match: json.dumps(substitutions[match[1]])[1:-1], text)
    json.loads(rendered)
    return rendered


def with_business_step(
    definition: str,
    task: Mapping[str, Any],
    *,
    input_path: str | None = None,
    extra_fields: Mapping[str, Any] | None = None,
) -> str:
    """The idempotency flow with its business step replaced by any Task (SQS, ECS, HTTP, a nested
    ``startExecution.sync:2``...). Claim, replay, release and the timeout stay as they are.

    ``task`` holds a Task state's ``Resource`` and optionally ``Parameters``, ``ResultSelector``
    and ``Retry``. Its Parameters see the flow's state: the execution input is ``$.event``, unless
    ``input_path`` selects what they see. What the task returns (after its ResultSelector) is the
    result that is recorded and replayed. ``extra_fields`` (HeartbeatSeconds...) are copied as they are.
    """
    unknown = sorted(set(task) - BUSINESS_TASK_FIELDS)
    if "Resource" not in task or unknown:
        raise DefinitionError(
            f"a business step needs Resource and may have {sorted(BUSINESS_TASK_FIELDS)}; got {unknown}"
        )
    document = json.loads(definition)
    flow_execute = copy.deepcopy(document["States"]["Execute"])
    for name in BUSINESS_STATES:
        state = document["States"][name]
        for field in ("Parameters", "ResultSelector", "OutputPath"):
            state.pop(field, None)
        state.update(
            {
                field: copy.deepcopy(task[field])
                for field in ("Resource", "Parameters", "Retry")
                if field in task
            }
        )
        state.update(extra_fields or {})
        if input_path is not None:
            state["InputPath"] = input_path
    selector = task.get("ResultSelector")
    execute = document["States"]["Execute"]
    # Execute keeps `{"value": result}` in a workflow variable (Assign reads the raw result, so the
    # task's ResultSelector is applied there); the flow without a record outputs the result itself.
    result = {"value": selector} if selector else {"value.$": "$"}
    if selector:
        document["States"]["ExecuteWithoutRecord"]["ResultSelector"] = selector
    # The redrive fence, as the flow's own Execute has it (a function Resource becomes lambda:invoke).
    if is_function(str(task["Resource"])):
        result = payload_selector(selector)
    execute["Assign"] = {**execute.get("Assign", {}), RESULT_VARIABLE: result}
    fence_jsonpath(execute, flow_execute)
    return json.dumps(document, indent=2)


# ASL defaults of a Retrier (Amazon States Language, "Retrying after an error").
DEFAULT_INTERVAL_SECONDS = 1
DEFAULT_MAX_ATTEMPTS = 3
DEFAULT_BACKOFF_RATE = 2.0
# Latency of the state transitions and DynamoDB calls between computing the key and the business
# step's start, and clock skew between the key Lambda and DynamoDB's callers.
LEASE_MARGIN_SECONDS = 10
# The states of the idempotency flow between the key's computation and the business step's end (a
# first claim made by Claim, with the provable key, retries as ClaimComputedKey does).
CLAIM_STATES = ("ClaimComputedKey", "Read")
EXECUTE_STATE = "Execute"


def worst_case_backoff_seconds(retriers: list[dict[str, Any]]) -> float:
    """The longest a state can wait between its attempts: every retrier used up (each keeps its own
    count), each wait its full ``IntervalSeconds * BackoffRate**n`` (FULL jitter only shortens it),
    capped by ``MaxDelaySeconds``."""
    total = 0.0
    for retrier in retriers:
        interval = retrier.get("IntervalSeconds", DEFAULT_INTERVAL_SECONDS)
        rate = retrier.get("BackoffRate", DEFAULT_BACKOFF_RATE)
        cap = retrier.get("MaxDelaySeconds")
        for attempt in range(retrier.get("MaxAttempts", DEFAULT_MAX_ATTEMPTS)):
            delay = interval * rate**attempt
            total += min(delay, cap) if cap is not None else delay
    return total


def worst_case_lease_seconds(definition: str, timeout_seconds: int, max_claim_attempts: int) -> int:
    """How long after the key is computed the business step may still be running, as ``definition``
    (the idempotency flow) allows: every claim attempt's retries and backoff (a claim, Read), then
    every attempt of the business step at its full timeout with the backoff between them, plus a
    margin. A shorter lease would let a second execution claim a key whose step still runs."""
    states = json.loads(definition)["States"]
    claim_phase = max_claim_attempts * sum(
        worst_case_backoff_seconds(states[name].get("Retry", [])) for name in CLAIM_STATES
    )
    execute_retriers = states[EXECUTE_STATE].get("Retry", [])
    attempts: int = 1 + sum(retrier.get("MaxAttempts", DEFAULT_MAX_ATTEMPTS) for retrier in execute_retriers)
    execute_phase = attempts * timeout_seconds + worst_case_backoff_seconds(execute_retriers)
    return math.ceil(claim_phase + execute_phase + LEASE_MARGIN_SECONDS)


def with_lease(settings: IdempotencySettings, definition: str) -> IdempotencySettings:
    """``settings`` with the lease ``definition`` needs, validated again (the lease may now exceed
    ``expires_after``: ConfigurationError, naming both)."""
    lease = worst_case_lease_seconds(definition, settings.timeout_seconds, settings.max_claim_attempts)
    return load_settings({**settings.to_environment(), "IDEMPOTENCY_LEASE_SECONDS": str(lease)})


CONDITION_FAILED = "DynamoDB.ConditionalCheckFailedException"


def is_a_flow_answer(state: str, error: str) -> bool:
    """Whether a Task attempt's failure is one the flow expects and catches: a conditional write of
    its own whose condition failed (a duplicate's claim, a completion or release fenced by a newer
    owner). ``state`` as the history names it: ``Claim``, or ``<Step>.Claim`` in a wrapped step (a
    state of the user's own named as one of the flow's is taken for it)."""
    return error == CONDITION_FAILED and state.rpartition(".")[2] in _conditional_states()


@functools.cache
def _conditional_states() -> frozenset[str]:
    names: set[str] = set()
    for path in IDEMPOTENCY_FLOWS.values():
        for name, state in json.loads(path.read_text(encoding="utf-8"))["States"].items():
            arguments = state.get("Parameters", state.get("Arguments"))
            if isinstance(arguments, dict) and "ConditionExpression" in arguments:
                names.add(name)
    return frozenset(names)
