"""What a state machine lets a schedule vary, read from its definition: every state (to hold an
execution before it), and what its Tasks call (functions, DynamoDB operations) to fail."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from sfn_idempotency.local.compat.lambda_runtime import function_name_of
from sfn_idempotency.local.explorer.schedules import Surface
from sfn_idempotency.local.explorer.target import Target

_LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"
# The states an execution is held before: every moment between two of them is "before the next one"
_MOMENTS = frozenset({"Task", "Map", "Parallel", "Wait"})
# A function's ARN anywhere in a Task's arguments (a literal, or inside an intrinsic's text)
_FUNCTION_ARN = re.compile(r"arn:aws:lambda:[^:\s'\"]+:\d{12}:function:([A-Za-z0-9_-]+)")
_DYNAMODB_PREFIXES = ("arn:aws:states:::dynamodb:", "arn:aws:states:::aws-sdk:dynamodb:")


def surface_of(target: Target, max_steps: int) -> Surface:
    machine = target.cloud.sfn.describe_state_machine(stateMachineArn=target.state_machine_arn)
    definition = json.loads(machine["definition"])
    states = dict(states_of(definition))
    functions: set[str] = set()
    operations: set[str] = set()
    for state in states.values():
        resource = str(state.get("Resource", ""))
        arguments = state.get("Parameters") or state.get("Arguments") or {}
        if resource.startswith(_LAMBDA_INVOKE):
            functions.update(_FUNCTION_ARN.findall(json.dumps(arguments)))
            name = arguments.get("FunctionName") if isinstance(arguments, dict) else None
            if isinstance(name, str) and not name.startswith(("{%", "arn:")):
                functions.add(function_name_of(name))
        elif resource.startswith("arn:aws:lambda:"):
            functions.add(function_name_of(resource))
        for prefix in _DYNAMODB_PREFIXES:
            if resource.startswith(prefix):
                operation = resource.removeprefix(prefix).split(".")[0]
                operations.add(operation[:1].upper() + operation[1:])
    watched_functions = {name for name in target.watch if name not in states}  # the others: Task states
    return Surface(
        states=tuple(sorted(name for name, state in states.items() if state.get("Type") in _MOMENTS)),
        functions=tuple(sorted(functions | watched_functions)),
        dynamodb_operations=tuple(sorted(operations)),
        watched=tuple(sorted(watched_functions)),
        requests=len(target.requests),
        redrivable=machine["type"] == "STANDARD",
        helpers=bool(target.helper_machines()),
        large_results=target.large_results,
        max_steps=max_steps,
    )


def states_of(definition: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every state, those of Parallel branches and Map iterations included."""
    for name, state in definition.get("States", {}).items():
        yield name, state
        for branch in state.get("Branches", ()):
            yield from states_of(branch)
        for processor in ("ItemProcessor", "Iterator"):
            if processor in state:
                yield from states_of(state[processor])
