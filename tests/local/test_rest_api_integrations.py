"""REST APIs made through the API Gateway API and served by the engine (issue 39): each kind of
integration it runs, the mapping templates' variables, integration response selection, method
responses, passthrough behaviour, answered as API Gateway answers them."""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.http.mapping_templates import Parameters, render

DEADLINE_SECONDS = 30
CLOSES_WITHIN_SECONDS = 0.25  # socketserver's default poll alone took up to 0.5 s
REGION = "us-east-1"
DYNAMODB_PUT_ITEM = f"arn:aws:apigateway:{REGION}:dynamodb:action/PutItem"


def function_uri(arn: str) -> str:
    return f"arn:aws:apigateway:{REGION}:lambda:path/2015-03-31/functions/{arn}/invocations"


class Api:
    """One REST API built as a script would build it: resources, methods, integrations, a stage."""

    def __init__(self, cloud: LocalCloud) -> None:
        self.cloud = cloud
        self.client = cloud.client("apigateway")
        self.id = self.client.create_rest_api(name="scripted")["id"]
        self.root = self.client.get_resources(restApiId=self.id)["items"][0]["id"]

    def resource(self, path: str) -> str:
        parent = self.root
        for part in path.strip("/").split("/"):
            known = {r["path"]: r["id"] for r in self.client.get_resources(restApiId=self.id)["items"]}
            parent_path = next(p for p, i in known.items() if i == parent)
            wanted = f"{parent_path.rstrip('/')}/{part}"
            parent = (
                known.get(wanted)
                or self.client.create_resource(restApiId=self.id, parentId=parent, pathPart=part)["id"]
            )
        return str(parent)

    def method(
        self,
        verb: str,
        path: str,
        integration: dict[str, Any],
        responses: dict[str, dict[str, Any]],
        method_responses: tuple[str, ...] | None = None,
    ) -> None:
        resource = self.resource(path) if path != "/" else self.root
        self.client.put_method(
            restApiId=self.id, resourceId=resource, httpMethod=verb, authorizationType="NONE"
        )
        self.client.put_integration(restApiId=self.id, resourceId=resource, httpMethod=verb, **integration)
        for status in method_responses if method_responses is not None else tuple(responses):
            self.client.put_method_response(
                restApiId=self.id, resourceId=resource, httpMethod=verb, statusCode=status
            )
        for status, response in responses.items():
            self.client.put_integration_response(
                restApiId=self.id, resourceId=resource, httpMethod=verb, statusCode=status, **response
            )

    def deploy(self, stage: str = "dev", variables: dict[str, str] | None = None) -> str:
        deployment = self.client.create_deployment(restApiId=self.id)["id"]
        self.client.create_stage(
            restApiId=self.id, stageName=stage, deploymentId=deployment, variables=variables or {}
        )
        return self.cloud.serve_rest_api(self.id)[stage]


@pytest.fixture
def api(local_cloud: LocalCloud) -> Api:
    return Api(local_cloud)


def call(method: str, url: str, **options: Any) -> httpx.Response:
    return httpx.request(method, url, timeout=DEADLINE_SECONDS, **options)


def add_function(cloud: LocalCloud, name: str, handler: Callable[[Any, Any], Any]) -> str:
    return cloud.add_function(name, handler).arn


# -- MOCK ------------------------------------------------------------------------------------------
def test_a_mock_answers_the_status_its_request_template_names_through_its_selection_pattern(api: Api):
    # Given a MOCK whose request template names a status from the query string
    api.method(
        "GET",
        "/health",
        {
            "type": "MOCK",
            "requestTemplates": {
                "application/json": '{"statusCode": #if($input.params("down") == "yes")503#{else}200#end}'
            },
        },
        {
            "200": {"responseTemplates": {"application/json": '{"status": "ok", "stage": "$context.stage"}'}},
            "503": {
                "selectionPattern": "5\\d{2}",
                "responseTemplates": {"application/json": '{"status": "down"}'},
                "responseParameters": {"method.response.header.Retry-After": "'30'"},
            },
        },
    )
    url = api.deploy()

    # When it is asked up, then down
    up, down = call("GET", f"{url}health"), call("GET", f"{url}health?down=yes")

    # Then each got the response its selection picked: status, body and mapped header
    assert (up.status_code, up.json()) == (200, {"status": "ok", "stage": "dev"})
    assert (down.status_code, down.json(), down.headers["retry-after"]) == (503, {"status": "down"}, "30")


def test_a_selected_status_without_a_method_response_is_a_500(api: Api):
    # API Gateway: "Output mapping refers to an invalid method response"
    api.method(
        "GET",
        "/only",
        {"type": "MOCK", "requestTemplates": {"application/json": '{"statusCode": 200}'}},
        {"200": {"responseTemplates": {"application/json": "{}"}}},
        method_responses=("201",),
    )
    answer = call("GET", f"{api.deploy()}only")
    assert (answer.status_code, answer.json()) == (500, {"message": "Internal server error"})


def test_a_cloud_that_served_an_api_closes_at_once():
    # Given a cloud whose REST API stage has just answered
    cloud = LocalCloud().start()
    try:
        api = Api(cloud)
        api.method(
            "GET",
            "/ping",
            {"type": "MOCK", "requestTemplates": {"application/json": '{"statusCode": 200}'}},
            {"200": {}},
        )
        assert call("GET", f"{api.deploy()}ping").status_code == 200
    finally:
        # When it closes
        started = time.monotonic()
        cloud.close()

    # Then the stage's server stopped without waiting out the standard library's half-second poll
    assert time.monotonic() - started < CLOSES_WITHIN_SECONDS


# -- the mapping template's variables -------------------------------------------------------------
def test_the_template_sees_input_params_path_json_util_context_and_stage_variables(api: Api):
    # Given a MOCK that writes what its request saw into its response (the response template reads
    # the same request's parameters)
    template = """
#set($all = $input.params())
#set($nothing = "")
{
  "id": "$input.params('id')",
  "q": "$input.params('q')",
  "header": "$input.params('X-Trace')",
  "pathNames": "#foreach($name in $all.path.keySet())$name#if($foreach.hasNext),#end#end",
  "method": "$context.httpMethod",
  "resourcePath": "$context.resourcePath",
  "path": "$context.path",
  "color": "$stageVariables.color",
  "encoded": "$util.urlEncode('a b&c')",
  "decoded": "$util.base64Decode($util.base64Encode('héllo'))",
  "emptyString": #if($nothing.empty)true#{else}false#end,
  "upper": "$context.stage.toUpperCase()"
}"""
    api.method(
        "POST",
        "/items/{id}",
        {"type": "MOCK", "requestTemplates": {"application/json": '{"statusCode": 200}'}},
        {"200": {"responseTemplates": {"application/json": template}}},
    )
    url = api.deploy("beta", {"color": "teal"})

    # When it is called with a path parameter, a query string and a header
    answer = call("POST", f"{url}items/i-9?q=x", json={"a": 1}, headers={"X-Trace": "t-1"})

    # Then each variable is what API Gateway documents
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "id": "i-9",
        "q": "x",
        "header": "t-1",
        "pathNames": "id",
        "method": "POST",
        "resourcePath": "/items/{id}",
        "path": "/beta/items/i-9",
        "color": "teal",
        "encoded": "a+b%26c",
        "decoded": "héllo",
        "emptyString": True,
        "upper": "BETA",
    }


# An integration response template as public apps write one: a 404 for the error their workflow
# answers, the output otherwise.
DELETE_RESPONSE = """#if($input.path('$.error').toString().equals("DynamoDB.ConditionalCheckFailedException"))
#set($context.responseOverride.status = 404)gone#{else}$input.path('$.output')#end"""


@pytest.mark.parametrize(
    ("answer", "status", "text"),
    [
        ({"status": "SUCCEEDED", "output": "deleted"}, None, "deleted"),
        ({"status": "FAILED", "error": "DynamoDB.ConditionalCheckFailedException"}, 404, "gone"),
    ],
    ids=["success-has-no-error", "the-error-it-names"],
)
def test_a_method_called_on_a_missing_value_is_false_in_an_if(
    answer: dict[str, Any], status: int | None, text: str
):
    # When the template renders an answer with and without the error it tests for
    rendered = render(
        DELETE_RESPONSE, body=json.dumps(answer), parameters=Parameters(), context={}, stage_variables={}
    )

    # Then a method called on the missing error is false, as in Velocity (airspeed took it as true:
    # every success answered 404); the error named selects the 404
    assert (rendered.status, rendered.text) == (status, text)
    # And a missing value itself stays true in #if, as API Gateway was recorded rendering it
    missing = render(
        "#if($input.path('$.error'))yes#end",
        body="{}",
        parameters=Parameters(),
        context={},
        stage_variables={},
    )
    assert missing.text == "yes"


# -- Lambda, not a proxy ---------------------------------------------------------------------------
def test_a_lambda_integration_maps_its_result_and_selects_its_errors_by_message(
    local_cloud: LocalCloud, api: Api
):
    # Given a function that fails for a missing order, behind templates and a 404 selection pattern
    def lookup(event: Any, context: Any) -> Any:
        if event["orderId"] == "none":
            raise LookupError("NotFound: no order none")
        return {"orderId": event["orderId"], "total": 12}

    arn = add_function(local_cloud, "lookup", lookup)
    api.method(
        "GET",
        "/orders/{orderId}",
        {
            "type": "AWS",
            "integrationHttpMethod": "POST",
            "uri": function_uri(arn),
            "requestTemplates": {"application/json": '{"orderId": "$input.params(\'orderId\')"}'},
        },
        {
            "200": {"responseTemplates": {"application/json": "{\"total\": $input.path('$.total')}"}},
            "404": {
                "selectionPattern": "NotFound:.*",
                "responseTemplates": {"application/json": '{"error": "$input.path(\'$.errorMessage\')"}'},
            },
        },
    )
    url = api.deploy()

    # When a known and an unknown order are asked for
    found, missing = call("GET", f"{url}orders/o-1"), call("GET", f"{url}orders/none")

    # Then the result went through the 200 template, the error through the one its message selected
    assert (found.status_code, found.json()) == (200, {"total": 12})
    assert (missing.status_code, missing.json()) == (404, {"error": "NotFound: no order none"})
    assert local_cloud.lambdas.invocations("lookup") == 2


# -- an AWS service action -------------------------------------------------------------------------
def test_a_dynamodb_action_writes_the_item_and_its_errors_select_by_status(local_cloud: LocalCloud, api: Api):
    # Given PutItem behind a template that writes the path parameter, 4xx answers selected by status
    table = local_cloud.create_table("things", ttl_attribute="expiration")
    api.method(
        "PUT",
        "/things/{id}",
        {
            "type": "AWS",
            "integrationHttpMethod": "POST",
            "uri": DYNAMODB_PUT_ITEM,
            "requestTemplates": {
                "application/json": (
                    '{"TableName": "$stageVariables.table", "Item": {"id": {"S": "$input.params(\'id\')"}, '
                    '"name": {"S": "$input.path(\'$.name\')"}}, "ConditionExpression": "attribute_not_exists(id)"}'
                )
            },
        },
        {
            "200": {"responseTemplates": {"application/json": '{"created": "$input.params(\'id\')"}'}},
            "409": {
                "selectionPattern": "400",
                "responseTemplates": {"application/json": '{"error": "$input.path(\'$.__type\')"}'},
            },
        },
    )
    url = api.deploy(variables={"table": table})

    # When a thing is put, and put again
    first = call("PUT", f"{url}things/t-1", json={"name": "lamp"})
    again = call("PUT", f"{url}things/t-1", json={"name": "chair"})

    # Then the item is in the table once, and the second was refused by the condition
    assert (first.status_code, first.json()) == (200, {"created": "t-1"})
    assert again.status_code == 409
    assert again.json()["error"].endswith("ConditionalCheckFailedException")
    item = local_cloud.dynamodb.get_item(TableName=table, Key={"id": {"S": "t-1"}})["Item"]
    assert item["name"] == {"S": "lamp"}


# -- passthrough behaviour and bodies --------------------------------------------------------------
@pytest.mark.parametrize(
    ("behavior", "status"),
    [("WHEN_NO_MATCH", 200), ("WHEN_NO_TEMPLATES", 415), ("NEVER", 415)],
)
def test_a_content_type_without_a_template_follows_the_passthrough_behavior(
    api: Api, behavior: str, status: int
):
    api.method(
        "POST",
        "/echo",
        {
            "type": "MOCK",
            "passthroughBehavior": behavior,
            "requestTemplates": {"application/json": '{"statusCode": 200}'},
        },
        {"200": {"responseTemplates": {"application/json": '{"ok": true}'}}},
    )
    answer = call("POST", f"{api.deploy()}echo", content=b"a=1", headers={"Content-Type": "text/plain"})
    assert answer.status_code == status
    if status == 415:
        assert answer.json() == {"message": "Unsupported Media Type"}


def test_a_body_that_is_not_json_where_the_template_reads_json_is_api_gateway_s_400(api: Api):
    api.method(
        "POST",
        "/strict",
        {
            "type": "MOCK",
            "requestTemplates": {"application/json": '{"statusCode": 200, "x": $input.json(\'$\')}'},
        },
        {"200": {"responseTemplates": {"application/json": "{}"}}},
    )
    answer = call(
        "POST", f"{api.deploy()}strict", content=b"{oops", headers={"Content-Type": "application/json"}
    )
    assert answer.status_code == 400
    assert answer.json()["message"].startswith("Could not parse request body into json")


def test_a_method_the_engine_cannot_run_is_named_and_the_rest_is_served(api: Api):
    # Given an HTTP integration (the engine calls no network) beside a MOCK
    api.method(
        "GET",
        "/remote",
        {"type": "HTTP", "integrationHttpMethod": "GET", "uri": "https://example.com/"},
        {"200": {}},
    )
    api.method(
        "GET",
        "/local",
        {"type": "MOCK", "requestTemplates": {"application/json": '{"statusCode": 200}'}},
        {"200": {"responseTemplates": {"application/json": '{"local": true}'}}},
    )

    # When it is served
    with pytest.warns(UserWarning, match=r"GET /remote: an HTTP integration"):
        url = api.deploy()

    # Then the MOCK answers, and the unserved method is API Gateway's 403 here, never a guess
    assert call("GET", f"{url}local").json() == {"local": True}
    assert call("GET", f"{url}remote").status_code == 403
    assert json.loads(call("GET", f"{url}remote").text) == {"message": "Missing Authentication Token"}


def test_step_functions_actions_start_describe_and_stop_an_execution(local_cloud: LocalCloud, api: Api):
    # Given a Standard machine that waits, and StartExecution, DescribeExecution and StopExecution
    # behind three methods, as a REST API fronts a workflow asynchronously
    definition = json.dumps(
        {"StartAt": "Hold", "States": {"Hold": {"Type": "Wait", "Seconds": 600, "End": True}}}
    )
    machine = local_cloud.create_state_machine("held", definition, {})
    action = f"arn:aws:apigateway:{REGION}:states:action/"
    identity = {"200": {"responseTemplates": {"application/json": "$input.json('$')"}}}
    api.method(
        "POST",
        "/executions",
        {
            "type": "AWS",
            "integrationHttpMethod": "POST",
            "uri": f"{action}StartExecution",
            "requestTemplates": {
                "application/json": '{"stateMachineArn": "$stageVariables.machine", "input": "$util.escapeJavaScript($input.json(\'$\'))"}'
            },
        },
        identity,
    )
    for verb, name in (("GET", "DescribeExecution"), ("DELETE", "StopExecution")):
        api.method(
            verb,
            "/executions/{arn}",
            {
                "type": "AWS",
                "integrationHttpMethod": "POST",
                "uri": f"{action}{name}",
                "requestTemplates": {
                    "application/json": '{"executionArn": "$util.urlDecode($input.params(\'arn\'))"}'
                },
            },
            identity,
        )
    url = api.deploy(variables={"machine": machine})

    # When an execution is started, described, stopped and described again through the API
    started = call("POST", f"{url}executions", json={"orderId": "o-1"}).json()
    path = f"{url}executions/{urllib.parse.quote(started['executionArn'], safe='')}"
    running = call("GET", path).json()
    stopped = call("DELETE", path)
    ended = call("GET", path).json()

    # Then each answer is Step Functions' own, and the execution really ran and stopped
    assert running["status"] == "RUNNING"
    assert json.loads(running["input"]) == {"orderId": "o-1"}
    assert stopped.status_code == 200
    assert "stopDate" in stopped.json()
    assert ended["status"] == "ABORTED"
    assert local_cloud.sfn.describe_execution(executionArn=started["executionArn"])["status"] == "ABORTED"


# -- a state machine's apigateway:invoke Task ------------------------------------------------------
def test_an_apigateway_invoke_task_reaches_the_engine_s_api_and_fails_as_api_gateway_answers(
    local_cloud: LocalCloud, api: Api
):
    # Given an API whose POST /orders echoes its body through a Lambda proxy, and a machine that
    # invokes it at its own execute-api endpoint, then a path it lacks, then an API that does not exist
    def echo(event: Any, _context: Any) -> dict[str, Any]:
        return {
            "statusCode": 200,
            "body": json.dumps({"got": json.loads(event["body"]), "path": event["path"]}),
        }

    function = add_function(local_cloud, "echo", echo)
    api.method(
        "POST",
        "/orders",
        {"type": "AWS_PROXY", "integrationHttpMethod": "POST", "uri": function_uri(function)},
        {},
    )
    api.deploy(stage="prod")

    def invoke(endpoint: str, path: str) -> dict[str, Any]:
        return {
            "Type": "Task",
            "Resource": "arn:aws:states:::apigateway:invoke",
            "Parameters": {
                "ApiEndpoint": endpoint,
                "Method": "POST",
                "Stage": "prod",
                "Path": path,
                "RequestBody": {"orderId.$": "$.orderId"},
            },
        }

    endpoint = f"{api.id}.execute-api.{REGION}.amazonaws.com"
    machine = local_cloud.create_state_machine(
        "invoker",
        json.dumps(
            {
                "StartAt": "Known",
                "States": {
                    "Known": {
                        **invoke(endpoint, "orders"),
                        "ResultSelector": {"body.$": "$.ResponseBody", "status.$": "$.StatusCode"},
                        "End": True,
                    },
                },
            }
        ),
        {},
    )
    unknown_path = local_cloud.create_state_machine(
        "unknown-path",
        json.dumps(
            {"StartAt": "Missing", "States": {"Missing": {**invoke(endpoint, "nowhere"), "End": True}}}
        ),
        {},
    )
    unknown_api = local_cloud.create_state_machine(
        "unknown-api",
        json.dumps(
            {
                "StartAt": "Gone",
                "States": {
                    "Gone": {
                        **invoke(f"a1b2c3d4e5.execute-api.{REGION}.amazonaws.com", "orders"),
                        "End": True,
                    }
                },
            }
        ),
        {},
    )

    # When each runs
    known = local_cloud.run(machine, {"orderId": "o-1"})
    path_missing = local_cloud.run(unknown_path, {"orderId": "o-1"})
    api_missing = local_cloud.run(unknown_api, {"orderId": "o-1"})

    # Then the known method ran the function with the body, and the others fail with API Gateway's
    # status as the error and its body as the cause (as AWS's recording of a missing path has it)
    assert known.status == "SUCCEEDED", known.cause
    assert known.output == {"body": {"got": {"orderId": "o-1"}, "path": "/orders"}, "status": 200}
    assert (path_missing.status, path_missing.error) == ("FAILED", "ApiGateway.403")
    assert json.loads(path_missing.cause or "") == {"message": "Missing Authentication Token"}
    assert (api_missing.error, json.loads(api_missing.cause or "")) == (
        "ApiGateway.403",
        {"message": "Forbidden"},
    )


def test_an_apigateway_invoke_task_s_get_with_a_request_body_is_made_without_the_body(
    local_cloud: LocalCloud, api: Api
):
    # Given an API whose GET / answers what its Lambda proxy received, and a machine that invokes it
    # with GET and a RequestBody, as an AWS sample does (moto failed it as ApiGateway.ValueError)
    def report(event: Any, _context: Any) -> dict[str, Any]:
        return {"statusCode": 200, "body": json.dumps({"method": event["httpMethod"], "body": event["body"]})}

    function = add_function(local_cloud, "report", report)
    api.method(
        "GET", "/", {"type": "AWS_PROXY", "integrationHttpMethod": "POST", "uri": function_uri(function)}, {}
    )
    api.deploy(stage="Prod")
    task = {
        "Type": "Task",
        "Resource": "arn:aws:states:::apigateway:invoke",
        "Parameters": {
            "ApiEndpoint": f"{api.id}.execute-api.{REGION}.amazonaws.com",
            "Method": "GET",
            "Stage": "Prod",
            "Path": "/",
            "RequestBody.$": "$",
            "AuthType": "NO_AUTH",
        },
        "ResultSelector": {"body.$": "$.ResponseBody", "status.$": "$.StatusCode"},
        "End": True,
    }
    machine = local_cloud.create_state_machine(
        "getter", json.dumps({"StartAt": "Get", "States": {"Get": task}}), {}
    )

    # When it runs
    result = local_cloud.run(machine, {"message": "hello"})

    # Then the GET reached the function, without a body
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert result.output == {"body": {"method": "GET", "body": None}, "status": 200}
