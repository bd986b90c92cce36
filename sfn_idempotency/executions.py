"""Waiting for a Step Functions execution, the same way against AWS and the local engine."""

from __future__ import annotations

import time
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
