"""Fix 30: an execution whose state machine's ``loggingConfiguration`` names a CloudWatch Logs group
writes its history events there, in Step Functions' log format, as AWS does.

moto's interpreter has the logging session, but moto never builds one (every execution gets
``None``), and its publisher hands moto's own Logs backend objects it cannot store. Express
executions have no history API on AWS: these logs are where AWS's console, and ours, read them.

Fix 106: the records are delivered as AWS delivers them, asynchronously and in batches, by one
delivery thread, never on the execution's path (moto's interpreter wrote each record, and the
metric filters read it, before its execution went on). Woken by a record, the thread lets the
records of the next 50 ms join it, so that a batch holds what every execution wrote meanwhile
(it delivered as soon as woken: batches of a few records, each paying a PutLogEvents). Every read
of CloudWatch Logs or of CloudWatch metrics first waits for the records already sent, so what a
reader sees is unchanged.

Fix 119 (speed): a record without execution data (``includeExecutionData`` false) leaves out its
event's input and output, four keys at the top of its details. moto deep-copied the details to pop
them; the top level is now copied without them. The values below it are shared with the history
event, as every record with execution data shares its whole details: neither is changed after.
"""

from __future__ import annotations

import collections
import datetime
import functools
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from sfn_idempotency.local.compat.patching import Patch
from sfn_idempotency.local.compat.redrive_fields import redrive_count

LOG = logging.getLogger(__name__)
# How long the delivery thread lets records gather before it delivers them (AWS delivers within
# seconds): one batch, one PutLogEvents a stream, for what executions write meanwhile. A reader
# does not wait for it (fix 106: every read delivers what was sent before it).
BATCH_WINDOW_SECONDS = 0.05
# What json.dumps(record, default=str) writes, with the encoder made once (dumps makes one per call).
_RECORD_ENCODER = json.JSONEncoder(default=str)

_EXECUTION = "moto.stepfunctions.parser.backend.execution:Execution"
_RESPONSES = "moto.stepfunctions.responses:StepFunctionResponse"
_LOGGING_MODULE = "moto.stepfunctions.parser.asl.eval.event.logging"


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
    return milliseconds, _RECORD_ENCODER.encode(record)


# A record on its way: the Logs backend, group and stream it goes to, the history event and the
# redrive count its execution had.
_Record = tuple[Any, str, str, dict[str, Any], int]


class LogDelivery:
    """Records sent, delivered in order by one thread in batches: one PutLogEvents per stream."""

    def __init__(self) -> None:
        self._pending: collections.deque[_Record] = collections.deque()
        self._sent = threading.Condition()
        # One batch at a time, so a stream's records stay in order (and moto's streams, which append
        # without a lock, get one writer); re-entrant, as a subscription filter's function may read
        # the logs while its record is delivered.
        self._delivering = threading.RLock()
        self._thread: threading.Thread | None = None

    def send(self, record: _Record) -> None:
        with self._sent:
            self._pending.append(record)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._deliver_forever, name="log-delivery", daemon=True
                )
                self._thread.start()
            self._sent.notify()

    def flush(self) -> None:
        """Deliver every record sent so far, in the caller's thread if the delivery thread has not."""
        with self._delivering:
            with self._sent:
                batch = list(self._pending)
                self._pending.clear()
            _deliver(batch)

    def _deliver_forever(self) -> None:
        while True:
            with self._sent:
                while not self._pending:
                    self._sent.wait()
            time.sleep(BATCH_WINDOW_SECONDS)
            self.flush()


delivery = LogDelivery()


def _deliver(batch: list[_Record]) -> None:
    from moto.logs.exceptions import ResourceNotFoundException

    streams: dict[tuple[int, str, str], tuple[Any, list[dict[str, Any]]]] = {}
    for logs, group, stream, history_log, redrives in batch:
        milliseconds, message = _log_record(history_log, redrives)
        streams.setdefault((id(logs), group, stream), (logs, []))[1].append(
            {"timestamp": milliseconds, "message": message}
        )
    for (_, group, stream), (logs, events) in streams.items():
        # Concurrent executions of one machine share its stream, and each takes its record's time
        # before it sends the record: a batch is put in time order, as PutLogEvents requires.
        events.sort(key=lambda event: event["timestamp"])
        try:
            logs.ensure_log_stream(group, stream)
            logs.put_log_events(group, stream, events)
        except ResourceNotFoundException:
            # As on AWS, an execution whose log group is gone runs on; its records are dropped.
            LOG.debug("no log group %s: %d records not logged", group, len(events))
        except Exception:  # a delivery that failed loses its records, never the delivery thread
            LOG.warning(
                "%d records for log group %s could not be delivered", len(events), group, exc_info=True
            )


def _publish_to_moto_logs(original: Any) -> Any:
    def publish_history_log(self: Any, history_log: dict[str, Any]) -> None:
        group, stream = self.configuration.log_group_name, self.configuration.log_stream_name
        redrives = redrive_count(getattr(self, "execution", None))
        delivery.send((self._logs_client, group, stream, history_log, redrives))

    return publish_history_log


def _after_delivery(original: Callable[..., Any]) -> Callable[..., Any]:
    """A read of Logs or of CloudWatch metrics sees every record sent before it (fix 106)."""

    @functools.wraps(original)
    def read(*args: Any, **kwargs: Any) -> Any:
        delivery.flush()
        return original(*args, **kwargs)

    return read


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


# What a record without execution data leaves out (moto's ``_remove_data_from_history_log``).
_EXECUTION_DATA = frozenset({"input", "inputDetails", "output", "outputDetails"})


def _data_left_out_of_a_top_level_copy(original: Callable[..., Any]) -> Any:
    def create_history_log(
        event_id: int,
        source_event_id: int,
        event_type: Any,
        timestamp: Any,
        execution_arn: str,
        event_details: dict[str, Any] | None,
        include_execution_data: bool,
    ) -> Any:
        binding, details = (
            next(iter(event_details.items())) if event_details and len(event_details) == 1 else ("", None)
        )
        if include_execution_data or not isinstance(details, dict):
            return original(
                event_id,
                source_event_id,
                event_type,
                timestamp,
                execution_arn,
                event_details,
                include_execution_data,
            )
        without_data = {key: value for key, value in details.items() if key not in _EXECUTION_DATA}
        return original(
            event_id, source_event_id, event_type, timestamp, execution_arn, {binding: without_data}, True
        )

    return staticmethod(create_history_log)


_LOGS_BACKEND = "moto.logs.models:LogsBackend"
_CLOUDWATCH_BACKEND = "moto.cloudwatch.models:CloudWatchBackend"
# What reads the records or the metrics their filters put (an Insights query reads at its start).
_LOGS_READS = ("get_log_events", "filter_log_events", "describe_log_streams", "start_query")
_METRIC_READS = ("get_metric_statistics", "get_metric_data", "list_metrics", "describe_alarms")

PATCHES: tuple[Patch, ...] = (
    Patch(30, _EXECUTION, "__init__", _sessions_from_configuration),
    Patch(30, f"{_LOGGING_MODULE}:CloudWatchLoggingSession", "publish_history_log", _publish_to_moto_logs),
    *(Patch(106, _LOGS_BACKEND, name, _after_delivery) for name in _LOGS_READS),
    *(Patch(106, _CLOUDWATCH_BACKEND, name, _after_delivery) for name in _METRIC_READS),
    Patch(
        119,
        "moto.stepfunctions.parser.asl.eval.event.event_manager:EventManager",
        "_create_history_log",
        _data_left_out_of_a_top_level_copy,
    ),
    Patch(47, _RESPONSES, "create_state_machine", _checked_logging_configuration),
    Patch(47, _RESPONSES, "update_state_machine", _checked_logging_configuration),
)
