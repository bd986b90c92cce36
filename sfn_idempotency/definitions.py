"""ASL definitions: ``${Name}`` placeholders filled with CDK's definition_substitutions semantics, and
the idempotency flow around a business step other than a Lambda."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

PLACEHOLDER = re.compile(r"\$\{([A-Za-z][A-Za-z0-9_]*)\}")
# How the workflows that nest the idempotent one (order_workflow, sqs_batch) name their child.
NESTED_WORKFLOW_PLACEHOLDER = "IdempotencyStateMachineArn"
# The two states of the idempotency flow that run the business step.
BUSINESS_STATES = ("Execute", "ExecuteWithoutRecord")
BUSINESS_TASK_FIELDS = frozenset({"Resource", "Parameters", "ResultSelector", "Retry"})


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


def with_business_step(definition: str, task: Mapping[str, Any]) -> str:
    """The idempotency flow with its business step replaced by any Task (SQS, ECS, HTTP, a nested
    ``startExecution.sync:2``...). Claim, replay, release and the timeout stay as they are.

    ``task`` holds a Task state's ``Resource`` and optionally ``Parameters``, ``ResultSelector``
    and ``Retry``. Its Parameters see the flow's state: the execution input is ``$.event``. What the
    task returns (after its ResultSelector) is the result that is recorded and replayed.
    """
    unknown = sorted(set(task) - BUSINESS_TASK_FIELDS)
    if "Resource" not in task or unknown:
        raise DefinitionError(
            f"a business step needs Resource and may have {sorted(BUSINESS_TASK_FIELDS)}; got {unknown}"
        )
    document = json.loads(definition)
    for name in BUSINESS_STATES:
        state = document["States"][name]
        for field in ("Parameters", "ResultSelector", "OutputPath"):
            state.pop(field, None)
        state.update({field: task[field] for field in ("Resource", "Parameters", "Retry") if field in task})
    selector = task.get("ResultSelector")
    # Execute records `$.result.value`; the flow without a record outputs the result itself.
    document["States"]["Execute"]["ResultSelector"] = {"value": selector} if selector else {"value.$": "$"}
    if selector:
        document["States"]["ExecuteWithoutRecord"]["ResultSelector"] = selector
    return json.dumps(document, indent=2)
