"""A cloud's REST APIs served on loopback: a deployed stack's, one made through the API, and an
``apigateway:invoke`` Task's request answered as they answer it (compat fix 93)."""

from __future__ import annotations

import dataclasses
import threading
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from botocore.exceptions import ClientError

from sfn_idempotency.local.apps.deployed import DeployedStack, SkippedResourceWarning
from sfn_idempotency.local.compat import interpreter
from sfn_idempotency.local.compat.service_tasks import GatewayAnswer, GatewayRequest
from sfn_idempotency.local.http.integrations import HttpRequest, answer
from sfn_idempotency.local.http.request_guard import AccessPolicy
from sfn_idempotency.local.http.rest_apis import REST_API_TYPE, stages_of
from sfn_idempotency.local.http.server import RestApiServers, stage_urls


class IntegrationServices:
    """An API Gateway integration's calls: a Lambda function through the same seam as a Task's
    (in-process handlers, faults and call counts apply), any other action through the cloud's
    client, StartSyncExecution without the "sync-" host a loopback endpoint lacks."""

    def __init__(self, client: Callable[..., Any], region: str) -> None:
        self._client = client
        self._region = region
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()

    def call(self, service: str, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        with self._lock:  # one client per service (a boto3 client is thread-safe, not free to make)
            client = self._clients.get(service)
            if client is None:
                client = self._clients[service] = self._client(service, inject_host_prefix=False)
        reply: dict[str, Any] = client._make_api_call(operation, params)
        return reply

    def invoke(self, function_arn: str, payload: bytes) -> tuple[bytes, str | None]:
        lambda_client = interpreter.cached_boto_client_for(self._region, "lambda")
        reply = lambda_client.invoke(FunctionName=function_arn, Payload=payload)
        return reply["Payload"].read(), reply.get("FunctionError")


class ServedApis:
    """The REST APIs one cloud serves, each stage on a loopback port of its own, started at the
    first API served (``first_port``, then each next one; 0: any free port)."""

    def __init__(
        self,
        client: Callable[..., Any],
        services: IntegrationServices,
        access_policy: AccessPolicy,
        *,
        account: str,
        region: str,
        first_port: int,
    ) -> None:
        self._services = services
        self._account, self._region = account, region
        self._servers = RestApiServers(
            client, services, access_policy, account=account, region=region, first_port=first_port
        )

    def of_stack(self, stack: DeployedStack) -> DeployedStack:
        """The stack with its REST APIs served, their base URLs its ``api_endpoints``."""
        apis = stack.of_type(REST_API_TYPE)
        if not apis:
            return stack
        served, unserved = self._servers.serve(api.physical_id for api in apis)
        for line in unserved:
            warnings.warn(f"{stack.name}: not served: {line}", SkippedResourceWarning, stacklevel=3)
        endpoints = {}
        for api in apis:
            stages = stage_urls(served, api.physical_id)
            for stage, url in stages.items():
                endpoints[api.logical_id if len(stages) == 1 else f"{api.logical_id}/{stage}"] = url
        return dataclasses.replace(stack, api_endpoints=endpoints)

    def serve(self, rest_api_ids: Iterable[str]) -> tuple[dict[tuple[str, str], str], list[str]]:
        """Serve these APIs' stages: each one's base URL by (rest api id, stage), and what is not."""
        return self._servers.serve(rest_api_ids)

    def answer_invocation(self, request: GatewayRequest, apigateway: Any) -> GatewayAnswer | None:
        """An apigateway:invoke Task's request, answered as the stage it names answers it; None
        when the API or the stage does not exist."""
        try:
            stages = stages_of(apigateway, request.rest_api_id)
        except ClientError:
            return None
        stage = next((stage for stage in stages if stage.name == request.stage), None)
        if stage is None:
            return None
        http_request = HttpRequest(request.verb, request.path, request.query, request.headers, request.body)
        reply = answer(stage, http_request, self._services, self._account, self._region)
        return reply.status, reply.headers, reply.body

    def close(self) -> None:
        self._servers.close()
