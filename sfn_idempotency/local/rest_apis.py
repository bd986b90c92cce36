"""The REST APIs a deployed stack declares, served on loopback: each stage of each
``AWS::ApiGateway::RestApi`` gets a port, and each of its methods that integrates directly with
StartSyncExecution (what ``IdempotentHttpApi`` builds) is served there at ``/<stage>/<path>``,
rendering the method's own mapping templates with the stage's variables (sfn_idempotency.local.api_gateway).

What is served is read through the API Gateway API, so it is what the stack made (compat fixes 41
and 42 keep a method's integration and create its stage). A method of another kind (a Lambda proxy,
an HTTP integration) is not served: ``unserved`` names it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sfn_idempotency.local.api_gateway import LocalRestApi, Route, StartSyncExecution
from sfn_idempotency.local.request_guard import AccessPolicy

REST_API_TYPE = "AWS::ApiGateway::RestApi"
# arn:aws:apigateway:<region>:[<subdomain>.]states:action/StartSyncExecution
START_SYNC_EXECUTION_URI = re.compile(r":(?:[a-z0-9-]+\.)?states:action/StartSyncExecution$")
JSON = "application/json"
SUCCESS_STATUS = "200"


@dataclass(frozen=True)
class StageRoutes:
    rest_api_id: str
    stage: str
    routes: tuple[Route, ...]
    unserved: tuple[str, ...]  # "POST /path: why"


def stage_routes(apigateway: Any, rest_api_id: str) -> list[StageRoutes]:
    """Each stage of the API, and the routes it serves."""
    resources = [
        resource
        for page in apigateway.get_paginator("get_resources").paginate(
            restApiId=rest_api_id, embed=["methods"]
        )
        for resource in page["items"]
    ]
    found = []
    for stage in apigateway.get_stages(restApiId=rest_api_id)["item"]:
        name, variables = stage["stageName"], stage.get("variables", {})
        routes, unserved = [], []
        for resource in resources:
            for verb, method in resource.get("resourceMethods", {}).items():
                where = f"{verb} {resource['path']}"
                route, why = _route(method, f"{name}{resource['path']}", variables)
                if route is not None and verb == "POST":
                    routes.append(route)
                else:
                    unserved.append(f"{where}: {why or 'only POST methods are served'}")
        found.append(StageRoutes(rest_api_id, name, tuple(routes), tuple(unserved)))
    return found


def _route(method: dict[str, Any], path: str, variables: dict[str, str]) -> tuple[Route | None, str]:
    integration = method.get("methodIntegration") or {}
    if integration.get("type") != "AWS" or not START_SYNC_EXECUTION_URI.search(
        str(integration.get("uri", ""))
    ):
        kind = f"{integration.get('type', 'no')} integration with {integration.get('uri', 'no URI')}"
        return None, f"only AWS integrations with StartSyncExecution are served (this is an {kind})"
    request = (integration.get("requestTemplates") or {}).get(JSON)
    answers = integration.get("integrationResponses") or {}
    response = (answers.get(SUCCESS_STATUS, {}).get("responseTemplates") or {}).get(JSON)
    if not request or not response:
        return None, f"StartSyncExecution needs {JSON} request and {SUCCESS_STATUS} response templates"
    return Route(
        path=path.strip("/"), request_template=request, response_template=response, stage_variables=variables
    ), ""


class RestApiServers:
    """One LocalRestApi per API stage, kept across deployments (the port stays), stopped on close."""

    def __init__(
        self,
        client: Callable[..., Any],
        start_sync_execution: StartSyncExecution,
        access_policy: AccessPolicy,
    ) -> None:
        self._client = client
        self._start_sync_execution = start_sync_execution
        self._access_policy = access_policy
        self._servers: dict[tuple[str, str], LocalRestApi] = {}
        self._lock = threading.Lock()

    def serve(self, rest_api_ids: Iterable[str]) -> tuple[dict[tuple[str, str], str], list[str]]:
        """Serve these APIs' stages: each one's local base URL by (rest api id, stage), and what is
        not served. A stage or API that no longer exists stops being served."""
        apigateway = self._client("apigateway")
        ids = set(rest_api_ids)
        wanted = {
            (stage.rest_api_id, stage.stage): stage for api in ids for stage in stage_routes(apigateway, api)
        }
        existing = {api["id"] for api in apigateway.get_rest_apis()["items"]}
        with self._lock:
            for key in [
                key
                for key in self._servers
                if key[0] not in existing or (key[0] in ids and key not in wanted)
            ]:
                self._servers.pop(key).stop()
            endpoints: dict[tuple[str, str], str] = {}
            unserved: list[str] = []
            for key, stage in wanted.items():
                server = self._servers.get(key)
                if server is None:
                    server = LocalRestApi(
                        stage.routes, self._start_sync_execution, access_policy=self._access_policy
                    )
                    server.start()
                    self._servers[key] = server
                server.routes = stage.routes
                endpoints[key] = f"{server.endpoint}/{stage.stage}/"
                unserved.extend(f"{stage.rest_api_id}/{stage.stage} {line}" for line in stage.unserved)
        return endpoints, unserved

    def close(self) -> None:
        with self._lock:
            for server in self._servers.values():
                server.stop()
            self._servers.clear()
