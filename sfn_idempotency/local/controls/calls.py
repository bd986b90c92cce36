"""Intercepting the AWS calls that moto's interpreter makes from its Task states.

A hook sees ``(service, operation, params)`` and may answer the call itself, which is how Lambda
Invoke reaches our in-process handlers and how faults are injected.
"""

from __future__ import annotations

import io
import json
import threading
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.response import StreamingBody

from sfn_idempotency.local.compat.integrations import PARAMS_KEY


@dataclass(frozen=True)
class Reply:
    """What a hook answers instead of the service: a parsed response, or an error code."""

    status_code: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    request_id: str | None = None  # the answer's request id (a Lambda invocation's own), else drawn

    @classmethod
    def error(cls, code: str, message: str, status_code: int = 400) -> Reply:
        return cls(status_code, {"Error": {"Code": code, "Message": message}})

    @classmethod
    def lambda_payload(
        cls, payload: Any, function_error: str | None = None, request_id: str | None = None
    ) -> Reply:
        """Lambda's Invoke answer: ``payload`` as JSON, or as it is when it is already bytes."""
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        body: dict[str, Any] = {
            "StatusCode": 200,
            "ExecutedVersion": "$LATEST",
            "Payload": StreamingBody(io.BytesIO(data), len(data)),
        }
        if function_error:
            body["FunctionError"] = function_error
        return cls(200, body, {"content-length": str(len(data))}, request_id)


CallHook = Callable[[str, str, dict[str, Any]], Reply | None]
# (service, operation, HTTP status of its answer): after every call, an injected answer included
AnswerHook = Callable[[str, str, int], None]


@dataclass
class CallInterceptor:
    """Registered on the session whose clients moto's interpreter uses."""

    hooks: list[CallHook] = field(default_factory=list)
    answer_hooks: list[AnswerHook] = field(default_factory=list)

    def before_call(
        self, model: Any, context: dict[str, Any], **_: Any
    ) -> tuple[AWSResponse, dict[str, Any]] | None:
        service = model.service_model.service_name
        params = context.get(PARAMS_KEY, {})
        for hook in list(self.hooks):
            reply = hook(service, model.name, params)
            if reply is not None:
                return _as_botocore_response(reply)
        return None

    def after_call(self, http_response: Any, model: Any, **_: Any) -> None:
        for hook in list(self.answer_hooks):
            hook(model.service_model.service_name, model.name, int(http_response.status_code))


# The one interceptor: every Task client's calls pass it (engine/patches.py wires it into fix 1).
interceptor = CallInterceptor()


def _as_botocore_response(reply: Reply) -> tuple[AWSResponse, dict[str, Any]]:
    metadata = {
        "HTTPStatusCode": reply.status_code,
        "RequestId": reply.request_id or str(uuid.uuid4()),
        "HTTPHeaders": reply.headers,
    }
    http = AWSResponse(
        url="local://sfn-idempotency", status_code=reply.status_code, headers=reply.headers, raw=None
    )
    return http, {**reply.body, "ResponseMetadata": metadata}


class CallCounter:
    """Counts every AWS call the interpreter makes, by (service, operation)."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()  # executions call from their own threads

    def hook(self, service: str, operation: str, params: dict[str, Any]) -> Reply | None:
        with self._lock:
            self.calls[service, operation] += 1
        return None

    def snapshot(self) -> Counter[tuple[str, str]]:
        with self._lock:
            return Counter(self.calls)

    def count(self, service: str, operation: str | None = None) -> int:
        return sum(n for (s, o), n in self.snapshot().items() if s == service and operation in (None, o))
