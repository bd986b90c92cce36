"""A REST API as CDK's own constructs synthesize it (issue 39), deployed on the engine and called
through its served stage with a real HTTP client: CDK's default Step Functions mapping templates
on several verbs, a path parameter, a root ANY with CDK's default MOCK integration, a Lambda proxy
on a greedy path, and API Gateway's own answers where nothing matches."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sfn_idempotency.local import LocalCloud, compat
from sfn_idempotency.local.apps.deployed import DeployedStack, SkippedResourceWarning
from tests.infra.conftest import REST_API_STACK

DEADLINE_SECONDS = 30
MISSING_TOKEN = {"message": "Missing Authentication Token"}


@pytest.fixture(scope="module")
def deployed(rest_api_assembly: Path) -> Iterator[tuple[LocalCloud, DeployedStack]]:
    with LocalCloud() as cloud, warnings.catch_warnings():
        warnings.simplefilter("error", SkippedResourceWarning)  # everything in it is served
        yield cloud, cloud.deploy_cdk_out(rest_api_assembly).stack(REST_API_STACK)


@pytest.fixture(scope="module")
def stage_url(deployed: tuple[LocalCloud, DeployedStack]) -> str:
    (url,) = deployed[1].api_endpoints.values()
    return url


def call(method: str, url: str, **options: object) -> httpx.Response:
    return httpx.request(method, url, timeout=DEADLINE_SECONDS, **options)


def test_the_stage_is_served_under_its_name_and_the_output_names_it_as_aws_does(
    deployed: tuple[LocalCloud, DeployedStack], stage_url: str
):
    # Given the deployed stack (CDK's RestApi: one stage, "prod")
    _cloud, stack = deployed
    # Then the local URL ends in the stage's name, and so does the stack's Endpoint output (a
    # stage's Ref is its name, not a physical id)
    assert stage_url.endswith("/prod/")
    (endpoint,) = stack.outputs.values()
    assert endpoint.startswith("https://")
    assert endpoint.endswith(".execute-api.us-east-1.amazonaws.com/prod/")


def test_post_runs_the_express_workflow_through_cdk_s_default_templates(stage_url: str):
    # When a JSON body is posted to /orders with a query string
    answer = call("POST", f"{stage_url}orders?channel=web", json={"orderId": "o-1", "amount": 12})

    # Then the workflow ran with CDK's input (body, query string, path) and its output is the answer
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "body": {"orderId": "o-1", "amount": 12},
        "querystring": {"channel": "web"},
        "path": {},
    }


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_get_and_delete_with_a_path_parameter_and_no_body(stage_url: str, method: str):
    # When /orders/{orderId} is called without a body
    answer = call(method, f"{stage_url}orders/o-42")

    # Then the template got "{}" for the body and the path parameter by its name
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"body": {}, "querystring": {}, "path": {"orderId": "o-42"}}


@pytest.mark.parametrize(
    ("method", "path"),
    [("PUT", "orders"), ("GET", "nowhere"), ("GET", "orders/o-1/lines"), ("PATCH", "orders/o-1")],
)
def test_a_path_or_method_nobody_declared_is_missing_authentication_token(
    stage_url: str, method: str, path: str
):
    answer = call(method, f"{stage_url}{path}")
    assert (answer.status_code, answer.json()) == (403, MISSING_TOKEN)
    assert answer.headers["x-amzn-errortype"] == "MissingAuthenticationTokenException"


def test_another_stage_s_path_is_missing_authentication_token(stage_url: str):
    answer = call("GET", stage_url.replace("/prod/", "/test/orders"))
    assert (answer.status_code, answer.json()) == (403, MISSING_TOKEN)


def test_an_unknown_verb_is_api_gateway_s_json_never_an_html_page(stage_url: str):
    answer = call("BREW", f"{stage_url}orders")
    assert answer.status_code == 403
    assert answer.headers["content-type"] == "application/json"
    assert answer.json() == MISSING_TOKEN


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
def test_the_root_any_mock_without_integration_responses_is_api_gateway_s_500(stage_url: str, method: str):
    # CDK's root.add_method("ANY"): a MOCK integration with no integration response, which API
    # Gateway answers "Internal server error" (no output mapping), as JSON
    answer = call(method, stage_url)
    assert (answer.status_code, answer.json()) == (500, {"message": "Internal server error"})


def test_a_lambda_proxy_on_a_greedy_path_gets_the_proxy_event(stage_url: str):
    # When a path below /files/{proxy+} is called with a query string and a body
    answer = call("PUT", f"{stage_url}files/a/b.txt?version=2", content=b"hello")

    # Then the function got API Gateway's proxy event and its answer is the HTTP answer
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-handled-by"].startswith(f"{REST_API_STACK}-Proxy")
    assert answer.json() == {
        "httpMethod": "PUT",
        "resource": "/files/{proxy+}",
        "path": "/files/a/b.txt",
        "pathParameters": {"proxy": "a/b.txt"},
        "queryStringParameters": {"version": "2"},
        "body": "hello",
        "stage": "prod",
    }


def test_a_malformed_proxy_answer_is_502(stage_url: str):
    answer = call("GET", f"{stage_url}files/broken")
    assert (answer.status_code, answer.json()) == (502, {"message": "Internal server error"})


def test_a_body_that_is_not_json_is_api_gateway_s_400(stage_url: str):
    # CDK's template reads $input.body as it stands: the execution input is not JSON, and Step
    # Functions refuses it; the integration response for 4xx answers CDK's "Bad request!"
    answer = call(
        "POST", f"{stage_url}orders", content=b"not json", headers={"Content-Type": "application/json"}
    )
    assert answer.status_code == 400
    assert answer.json() == {"error": "Bad request!"}


def test_each_request_starts_one_synchronous_execution_of_the_workflow(
    deployed: tuple[LocalCloud, DeployedStack], stage_url: str
):
    # Given the Express workflow behind the API
    _cloud, stack = deployed
    (machine,) = stack.of_type("AWS::StepFunctions::StateMachine")
    name = machine.arn.rsplit(":", 1)[-1]

    def executions() -> int:
        with compat.sync_executions_lock:
            return sum(f":express:{name}:" in arn for arn in compat.sync_executions)

    before = executions()

    # When it is called twice
    for order in ("o-7", "o-8"):
        assert call("GET", f"{stage_url}orders/{order}").status_code == 200

    # Then there were two synchronous executions of that machine, and no more
    assert executions() == before + 2
