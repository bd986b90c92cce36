"""Fix 30: an execution whose state machine's ``loggingConfiguration`` names a CloudWatch Logs group
writes its history events there, in Step Functions' log format, as AWS does.

moto's interpreter has the logging session, but moto never builds one (every execution gets
``None``), and its publisher hands moto's own Logs backend objects it cannot store. Express
executions have no history API on AWS: these logs are where AWS's console, and ours, read them.
"""

from __future__ import annotations

import datetime
import functools
import json
import logging
import threading
from typing import Any

from sfn_idempotency.local.compat.patching import Patch
from sfn_idempotency.local.compat.redrive_fields import redrive_count

LOG = logging.getLogger(__name__)

_EXECUTION = "moto.stepfunctions.parser.backend.execution:Execution"
_RESPONSES = "moto.stepfunctions.responses:StepFunctionResponse"
_LOGGING_MODULE = "moto.stepfunctions.parser.asl.eval.event.logging"
# moto's log streams append without a lock; concurrent executions of one machine share a stream.
_stream_lock = threading.Lock()


def _session_for(state_machine: Any, execution_arn: str) -> Any:
    """The logging session the state machine's configuration asks for, or None (level OFF, or no
    CloudWatch Logs group)."""
    from moto.stepfunctions.parser.asl.eval.event.logging import (
        CloudWatchLoggingConfiguration,
        CloudWatchLoggingSession,
    )

    configured = getattr(state_machine, "loggingConfiguration", None) or {}
    configuration = CloudWatchLoggingConfiguration.from_logging_configuration(
        state_machine_arn=state_machine.arn,
        logging_configuration={"includeExecutionData": False, **configured},
    )
    return None if configuration is None else CloudWatchLoggingSession(execution_arn, configuration)


def _sessions_from_configuration(original: Any) -> Any:
    @functools.wraps(original)
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if self._cloud_watch_logging_session is None:
            self._cloud_watch_logging_session = _session_for(self.state_machine, self.exec_arn)
        if self._cloud_watch_logging_session is not None:
            self._cloud_watch_logging_session.execution = self  # whose redrive count its records say

    return init


def _log_record(history_log: dict[str, Any], redrives: int) -> tuple[int, str]:
    """(timestamp in ms, message): AWS's record has ``event_timestamp`` as milliseconds in a string."""
    stamp = history_log["event_timestamp"]  # moto passes ISO 8601 text, its own type says datetime
    moment = stamp if isinstance(stamp, datetime.datetime) else datetime.datetime.fromisoformat(stamp)
    milliseconds = int(moment.timestamp() * 1000)
    record = {**history_log, "event_timestamp": str(milliseconds), "redrive_count": str(redrives)}
    return milliseconds, json.dumps(record, default=str)


def _publish_to_moto_logs(original: Any) -> Any:
    def publish_history_log(self: Any, history_log: dict[str, Any]) -> None:
        from moto.logs.exceptions import ResourceNotFoundException

        milliseconds, message = _log_record(history_log, redrive_count(getattr(self, "execution", None)))
        group, stream = self.configuration.log_group_name, self.configuration.log_stream_name
        try:
            with _stream_lock:
                self._logs_client.ensure_log_stream(group, stream)
                self._logs_client.put_log_events(
                    group, stream, [{"timestamp": milliseconds, "message": message}]
                )
        except ResourceNotFoundException:
            # As on AWS, an execution whose log group is gone runs on; its records are dropped.
            LOG.debug("no log group %s: history of %s not logged", group, self.execution_arn)

    return publish_history_log


# AWS's own stream, created in the group to check it can deliver there (CreateStateMachine, and
# UpdateStateMachine with a logging configuration).
VALIDATION_STREAM = "log_stream_created_by_aws_to_validate_log_delivery_subscriptions"
_ONE_DESTINATION = "Invalid Logging Configuration: Must specify exactly one Log Destination."
_NOT_FOUND = "Invalid Logging Configuration: Log Destination not found."


def _check_logging_configuration(configuration: dict[str, Any] | None) -> None:
    """Fix 47: refuse what AWS refuses (InvalidLoggingConfiguration), and create the validation
    stream in the destination group. A level other than OFF needs its destination, and there is at
    most one (documented: "Limited to size 1. Required, if your log level is not set to OFF"); the
    group must exist (recorded: test_sfn_api_logs test_deleted_log_group)."""
    from moto.logs.exceptions import ResourceAlreadyExistsException, ResourceNotFoundException
    from moto.logs.models import logs_backends
    from moto.stepfunctions.parser.api import InvalidLoggingConfiguration

    if not configuration:
        return
    destinations = configuration.get("destinations") or []
    level = configuration.get("level") or "OFF"
    if len(destinations) > 1 or (level != "OFF" and not destinations):
        raise InvalidLoggingConfiguration(_ONE_DESTINATION)
    for destination in destinations:
        arn = str((destination.get("cloudWatchLogsLogGroup") or {}).get("logGroupArn", ""))
        parts = arn.split(":")  # arn:aws:logs:<region>:<account>:log-group:<name>[:*]
        if len(parts) < 7 or parts[2] != "logs" or parts[5] != "log-group":
            raise InvalidLoggingConfiguration(_NOT_FOUND)
        region, account, group = parts[3], parts[4], parts[6]
        try:
            logs_backends[account][region].create_log_stream(group, VALIDATION_STREAM)
        except ResourceAlreadyExistsException:
            pass
        except ResourceNotFoundException:
            raise InvalidLoggingConfiguration(_NOT_FOUND) from None


def _checked_logging_configuration(original: Any) -> Any:
    def answer(self: Any) -> Any:
        _check_logging_configuration(self._get_param("loggingConfiguration"))
        return original(self)

    return answer


PATCHES: tuple[Patch, ...] = (
    Patch(30, _EXECUTION, "__init__", _sessions_from_configuration),
    Patch(30, f"{_LOGGING_MODULE}:CloudWatchLoggingSession", "publish_history_log", _publish_to_moto_logs),
    Patch(47, _RESPONSES, "create_state_machine", _checked_logging_configuration),
    Patch(47, _RESPONSES, "update_state_machine", _checked_logging_configuration),
)
