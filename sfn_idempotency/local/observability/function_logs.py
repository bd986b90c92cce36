"""A function's errors in its CloudWatch Logs group (``/aws/lambda/<name>``), as Lambda's runtimes
write them there: where ``aws logs tail`` and the console look for them, whoever invoked the function.
Only errors are written; a successful invocation's START, END and REPORT lines are not.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
from typing import Any

LOG_GROUP_PREFIX = "/aws/lambda/"
LOG = logging.getLogger(__name__)


def log_error(account: str, region: str, name: str, runtime: str, payload: Any) -> None:
    """The runtime's record of an invocation error (``payload``, Lambda's error answer) in the
    function's log group, as Lambda writes it
    (https://docs.aws.amazon.com/lambda/latest/dg/python-exceptions.html,
    https://docs.aws.amazon.com/lambda/latest/dg/nodejs-exceptions.html): a Python runtime's
    ``[ERROR] <type>: <message>`` and its traceback, a Node.js runtime's ``Invoke Error`` and the
    error as JSON. The group and a stream of the day are made as the first invocation makes them."""
    from moto.logs.models import logs_backends

    logs = logs_backends[account][region]
    group = f"{LOG_GROUP_PREFIX}{name}"
    now = datetime.datetime.now(datetime.UTC)
    stream = f"{now:%Y/%m/%d}/[$LATEST]{hashlib.md5(name.encode()).hexdigest()}"
    record = {"timestamp": int(now.timestamp() * 1000), "message": _record(runtime, payload)}
    try:
        if group not in logs.groups:
            logs.create_log_group(group, {})
        logs.ensure_log_stream(group, stream)
        logs.put_log_events(group, stream, [record])
    except Exception:  # a log that cannot be written never fails the invocation
        LOG.warning("the error of %s could not be written to %s", name, group, exc_info=True)


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
