"""Waiting for a Step Functions execution and reading its history, the same way against AWS and the
local engine."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

TERMINAL_STATUSES = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"})
POLL_INTERVAL_SECONDS = 0.005
MAX_POLL_INTERVAL_SECONDS = 0.5


def wait_for_execution(
    sfn: Any, execution_arn: str, timeout: float, max_interval: float = MAX_POLL_INTERVAL_SECONDS
) -> dict[str, Any]:
    """DescribeExecution until the execution ends; TimeoutError after ``timeout`` seconds.

    Polls every 5 ms at first, backing off to ``max_interval``: local executions end in
    milliseconds, AWS ones may take minutes."""
    deadline = time.monotonic() + timeout
    interval = POLL_INTERVAL_SECONDS
    while True:
        description: dict[str, Any] = sfn.describe_execution(executionArn=execution_arn)
        if description["status"] in TERMINAL_STATUSES:
            return description
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{execution_arn} still {description['status']} after {timeout:g} s")
        time.sleep(interval)
        interval = min(interval * 1.5, max_interval)


def history(sfn: Any, execution_arn: str) -> tuple[dict[str, Any], ...]:
    pages = sfn.get_paginator("get_execution_history").paginate(executionArn=execution_arn)
    return tuple(event for page in pages for event in page["events"])


def entered_states(events: Iterable[dict[str, Any]]) -> list[str]:
    """The states entered, in order: the path the execution took."""
    return [
        event["stateEnteredEventDetails"]["name"]
        for event in events
        if event["type"].endswith("StateEntered")
    ]


def lambda_invocations(events: Iterable[dict[str, Any]], function_arn: str) -> int:
    """How many times the execution scheduled the function (retries included), through
    ``lambda:invoke`` or with the function's ARN as the Resource."""
    return sum(1 for event in events if _schedules(event, function_arn))


def _schedules(event: dict[str, Any], function_arn: str) -> bool:
    if event["type"] == "LambdaFunctionScheduled":
        return bool(event["lambdaFunctionScheduledEventDetails"]["resource"] == function_arn)
    return bool(
        event["type"] == "TaskScheduled"
        and event["taskScheduledEventDetails"]["resourceType"] == "lambda"
        and json.loads(event["taskScheduledEventDetails"]["parameters"]).get("FunctionName") == function_arn
    )
