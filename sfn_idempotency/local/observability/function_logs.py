"""A function's invocations in its CloudWatch Logs group (``/aws/lambda/<name>``), as Lambda writes
them there: where ``aws logs tail``, a README's "check the function's logs" and the console look,
whoever invoked the function. Each invocation of a function made through the Lambda API is written
whole (its START line, what it printed, the runtime's record of its error, END and REPORT); the
engine's own functions (``LocalCloud.add_function``) have their errors written.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
import re
from typing import Any

from sfn_idempotency.local.compat import lambda_runtime
from sfn_idempotency.local.runtimes.outcome import Outcome

LOG_GROUP_PREFIX = "/aws/lambda/"
LOG = logging.getLogger(__name__)
# A line that begins a log event of its own: the runtime's lines, a Node.js console record (its
# timestamp first: an object it prints spans lines, one event on Lambda), a Python logging record.
_EVENT_START = re.compile(r"(START|END|REPORT) RequestId: |\d{4}-\d\d-\d\dT|\[[A-Z]+\]")
_NODE_RECORD = re.compile(r"\d{4}-\d\d-\d\dT")


def install() -> None:
    """Write every invocation of a Lambda API function to its group (compat fix 22 runs them)."""
    if log_invocation not in lambda_runtime.invocation_listeners:
        lambda_runtime.invocation_listeners.append(log_invocation)


def log_invocation(function: Any, outcome: Outcome) -> None:
    """One invocation's log as Lambda writes it to the group, one event per record: START, what the
    function printed, the runtime's record of its error if it failed, END and REPORT."""
    events = _events(outcome.log)
    if outcome.errored:
        end = next((i for i, event in enumerate(events) if event.startswith("END RequestId: ")), len(events))
        events.insert(end, _record(str(function.run_time or ""), _payload_of(outcome.payload)))
    _put(str(function.account_id), str(function.region), str(function.function_name), events)


def log_error(account: str, region: str, name: str, runtime: str, payload: Any) -> None:
    """The runtime's record of an invocation error (``payload``, Lambda's error answer) in the
    function's log group, as Lambda writes it
    (https://docs.aws.amazon.com/lambda/latest/dg/python-exceptions.html,
    https://docs.aws.amazon.com/lambda/latest/dg/nodejs-exceptions.html): a Python runtime's
    ``[ERROR] <type>: <message>`` and its traceback, a Node.js runtime's ``Invoke Error`` and the
    error as JSON."""
    _put(account, region, name, [_record(runtime, payload)])


def _put(account: str, region: str, name: str, messages: list[str]) -> None:
    """The messages, in order, in the function's group and a stream of the day, made as the first
    invocation makes them."""
    from moto.logs.models import logs_backends

    logs = logs_backends[account][region]
    group = f"{LOG_GROUP_PREFIX}{name}"
    now = datetime.datetime.now(datetime.UTC)
    stream = f"{now:%Y/%m/%d}/[$LATEST]{hashlib.md5(name.encode()).hexdigest()}"
    at = int(now.timestamp() * 1000)
    try:
        if group not in logs.groups:
            logs.create_log_group(group, {})
        logs.ensure_log_stream(group, stream)
        logs.put_log_events(group, stream, [{"timestamp": at, "message": message} for message in messages])
    except Exception:  # a log that cannot be written never fails the invocation
        LOG.warning("the log of %s could not be written to %s", name, group, exc_info=True)


def _events(log: str) -> list[str]:
    """The invocation's log (START, what the function printed, END, REPORT) cut into events: a line
    continues the event before it only when that is a Node.js console record."""
    events: list[str] = []
    for line in log.splitlines():
        if events and not _EVENT_START.match(line) and _NODE_RECORD.match(events[-1]):
            events[-1] += f"\n{line}"
        elif line:
            events.append(line)
    return events


def _payload_of(payload: bytes) -> Any:
    try:
        return json.loads(payload)
    except ValueError:
        return payload.decode("utf-8", errors="replace")


def _record(runtime: str, payload: Any) -> str:
    if runtime.startswith("nodejs"):
        return f"ERROR\tInvoke Error \t{json.dumps(payload)}"
    if not isinstance(payload, dict):
        return f"[ERROR] {payload}"
    lines = [f"[ERROR] {payload.get('errorType') or ''}: {payload.get('errorMessage') or ''}"]
    trace = payload.get("stackTrace")
    if isinstance(trace, list) and trace:
        lines += ["Traceback (most recent call last):", *(str(frame).rstrip("\n") for frame in trace)]
    return "\n".join(lines)
