"""A state machine's own log group, as the CDK constructs and AWS's console name it
(``/aws/vendedlogs/states/<name>``), and the logging configuration that writes every event there."""

from __future__ import annotations

import contextlib
from typing import Any

VENDED_LOG_GROUP_PREFIX = "/aws/vendedlogs/states/"


def own_log_group(name: str) -> str:
    return f"{VENDED_LOG_GROUP_PREFIX}{name}"


def logging_to_own_group(
    logs: Any, name: str, region: str, account: str, *, include_execution_data: bool
) -> dict[str, Any]:
    """CreateStateMachine's ``loggingConfiguration`` (level ALL) to the machine's own log group,
    created here when it is not there. Express executions have no history API: they log with their
    data (compat fix 30), where the console reads them as AWS's does; what the metric filters read
    is logged without it, as the constructs log."""
    group = own_log_group(name)
    with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
        logs.create_log_group(logGroupName=group)
    group_arn = f"arn:aws:logs:{region}:{account}:log-group:{group}:*"
    return {
        "loggingConfiguration": {
            "level": "ALL",
            "includeExecutionData": include_execution_data,
            "destinations": [{"cloudWatchLogsLogGroup": {"logGroupArn": group_arn}}],
        }
    }
