"""SAM templates on the local engine (issue 40), at their edges: a mock file's test case, what the
engine cannot run, bad templates and overrides; each test with a cloud of its own."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest

from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.apps.deployed import DeploymentError, SkippedResourceWarning
from sfn_idempotency.local.apps.sam_templates import TemplateError, parameter_overrides
from sfn_idempotency.local.runtimes.node import NodeVersionWarning
from tests.local.test_sam_templates import APP, ORDER

PRICE_ON_NODE = "CodeUri: functions/price/\n      Handler: index.handler\n      Runtime: nodejs24.x"
PRICE_ON_JAVA = PRICE_ON_NODE.replace("nodejs24.x", "java21")


def test_a_mock_file_test_case_finds_a_machine_named_for_it(tmp_path: Path):
    # Given the template's machine named as the mock file's StateMachines entry says
    with LocalCloud(mock_config=APP / "MockConfigFile.json") as cloud, warnings.catch_warnings():
        warnings.simplefilter("ignore", NodeVersionWarning)
        stack = cloud.deploy_template(APP, state_machine_names={"OrderStateMachine": "Orders"})
        assert stack.arn("OrderStateMachine").endswith(":stateMachine:Orders")
        # When the test case runs
        run = cloud.run(f"{stack.arn('OrderStateMachine')}#PricedByMock", ORDER)
    # Then Price answered from the mock file, and the real functions ran around it
    assert run.status == "SUCCEEDED", run.cause
    assert run.output["total"] == 1
    assert run.output["recorded"] is True


def test_a_template_without_the_transform_names_it_for_its_sam_resources(
    local_cloud: LocalCloud, tmp_path: Path
):
    # Given a SAM function in a template that forgot the Transform
    template = {
        "Resources": {
            "Queue": {"Type": "AWS::SQS::Queue"},
            "Fn": {
                "Type": "AWS::Serverless::Function",
                "Properties": {"InlineCode": "x", "Runtime": "nodejs24.x"},
            },
        },
        "Outputs": {"FnArn": {"Value": {"Fn::GetAtt": ["Fn", "Arn"]}}},
    }
    (tmp_path / "template.json").write_text(json.dumps(template))
    # When it is deployed
    with pytest.warns(SkippedResourceWarning) as caught:
        stack = local_cloud.deploy_template(tmp_path)
    # Then the function is skipped with a message naming the transform, and its output with it
    lines = [str(warning.message) for warning in caught]
    assert any(
        "skipped Fn (AWS::Serverless::Function)" in line and "AWS::Serverless-2016-10-31" in line
        for line in lines
    )
    assert any("skipped FnArn (Output): it refers to Fn" in line for line in lines)
    assert set(stack.resources) == {"Queue"}


def price_on_java(app: Path) -> Path:
    """A copy of the app whose price function is declared for Java."""
    shutil.copytree(APP, app)
    template = app / "template.yaml"
    assert PRICE_ON_NODE in template.read_text()
    template.write_text(template.read_text().replace(PRICE_ON_NODE, PRICE_ON_JAVA))
    return app


def test_a_function_of_a_runtime_the_engine_lacks_is_stood_in_for_and_the_rest_runs(
    local_cloud: LocalCloud, tmp_path: Path
):
    app = price_on_java(tmp_path / "app")
    # When the template's priced function is declared for Java, which the state machine calls
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NodeVersionWarning)
        with pytest.warns(SkippedResourceWarning) as caught:
            stack = local_cloud.deploy_template(app)
    # Then one line names the stand-in and why, and the rest of the app is deployed
    arn = "arn:aws:lambda:us-east-1:123456789012:function:app-PriceFunction-STANDIN"
    assert [str(w.message) for w in caught if "PriceFunction" in str(w.message)] == [
        "app: stood in for PriceFunction (AWS::Lambda::Function) (runtime java21: only Python and "
        f"Node.js zip functions run in the engine): not deployed; its references are {arn}, which does "
        "not exist here"
    ]
    assert "PriceFunction" not in stack.resources
    assert "ValidateFunction" in stack.resources
    # And the Task that calls it fails as a call to a function that does not exist
    run = local_cloud.run(stack.arn("OrderStateMachine"), ORDER)
    assert run.status == "FAILED"
    assert run.error == "Lambda.ResourceNotFoundException", run.cause
    assert "app-PriceFunction-STANDIN" in (run.cause or "")


def test_bad_templates_and_overrides_get_named_errors(local_cloud: LocalCloud, tmp_path: Path):
    with pytest.raises(TemplateError, match="has no template"):
        local_cloud.deploy_template(tmp_path)
    with pytest.raises(TemplateError, match="names Colour, which the template does not declare"):
        local_cloud.deploy_template(APP, parameters={"Colour": "blue"})
    (tmp_path / "template.yaml").write_text("Resources: [")
    with pytest.raises(TemplateError, match="not a template"):
        local_cloud.deploy_template(tmp_path)
    assert local_cloud.client("cloudformation").list_stacks()["StackSummaries"] == []


def test_a_template_section_left_empty_is_refused_as_cloudformation_refuses_it(
    local_cloud: LocalCloud, tmp_path: Path
):
    # Given a SAM template whose Parameters section has nothing under it (YAML reads it as null), as
    # a public app's has
    (tmp_path / "template.yaml").write_text(
        "Transform: AWS::Serverless-2016-10-31\n"
        "Parameters:\n"
        "Resources:\n"
        "  Queue:\n"
        "    Type: AWS::SQS::Queue\n",
        encoding="utf-8",
    )

    # When it is deployed, Then it is refused naming the section, in CloudFormation's words, and
    # nothing is deployed
    with pytest.raises(TemplateError, match=r"\[/Parameters\] 'null' values are not allowed in templates"):
        local_cloud.deploy_template(tmp_path)
    assert local_cloud.client("cloudformation").list_stacks()["StackSummaries"] == []


def test_parameter_overrides_read_as_the_sam_cli_reads_them():
    assert parameter_overrides(["Stage=prod Colour='light blue'", "ParameterKey=Size,ParameterValue=3"]) == {
        "Stage": "prod",
        "Colour": "light blue",
        "Size": "3",
    }
    with pytest.raises(TemplateError, match="is not Key=Value"):
        parameter_overrides(["nonsense"])


def test_a_function_the_mock_file_answers_for_is_deployed_whatever_its_runtime(tmp_path: Path):
    # Given the app with its price function declared for Java, and a mock file answering for it
    app = price_on_java(tmp_path / "app")
    with (
        LocalCloud(mock_config=APP / "MockConfigFile.json") as cloud,
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        # When it is deployed
        stack = cloud.deploy_template(app, state_machine_names={"OrderStateMachine": "Orders"})
        mocked = cloud.run(f"{stack.arn('OrderStateMachine')}#PricedByMock", ORDER)
        unmocked = cloud.run(stack.arn("OrderStateMachine"), ORDER)
    # Then it was deployed with a line saying so; the mocked test case passes, a real call is refused
    assert any(
        "PriceFunction (AWS::Lambda::Function) deployed for the mock file (runtime java21" in str(w.message)
        for w in caught
    )
    assert mocked.status == "SUCCEEDED", mocked.cause
    assert (unmocked.status, unmocked.error) == ("FAILED", "Runtime.Unavailable")


@pytest.mark.sfn_mock_config("../apps/sam_orders/MockConfigFile.json")
@pytest.mark.sfn_template(
    "../apps/sam_orders", parameters={"Stage": "fixture"}, state_machine_names={"OrderStateMachine": "Orders"}
)
def test_the_sam_app_fixture_deploys_the_marked_template(local_cloud: LocalCloud, sam_app):
    # Given the template the marker names, deployed by the fixture with its parameter and name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NodeVersionWarning)
        # When the mock file's test case runs, and an unmocked run
        mocked = local_cloud.run(f"{sam_app.arn('OrderStateMachine')}#PricedByMock", ORDER)
        real = local_cloud.run(sam_app.outputs["OrderStateMachineArn"], ORDER)
    # Then both succeed, the real one with the marker's parameter
    assert (mocked.status, mocked.output["total"]) == ("SUCCEEDED", 1)
    assert (real.status, real.output["stage"]) == ("SUCCEEDED", "fixture")


def test_a_layer_that_is_no_layer_arn_fails_its_function_in_lambda_s_words(
    local_cloud: LocalCloud, tmp_path: Path
):
    # Given a template whose function's layer is a parameter given a value that is no layer ARN
    (tmp_path / "fn").mkdir()
    (tmp_path / "fn" / "app.py").write_text("def handler(event, context):\n    return event\n")
    (tmp_path / "template.yaml").write_text(
        "Transform: AWS::Serverless-2016-10-31\n"
        "Parameters:\n"
        "  LayerArn: {Type: String}\n"
        "Resources:\n"
        "  Fn:\n"
        "    Type: AWS::Serverless::Function\n"
        "    Properties: {CodeUri: fn/, Handler: app.handler, Runtime: python3.13, Layers: [!Ref LayerArn]}\n",
        encoding="utf-8",
    )

    # When it is deployed with a placeholder a user typed
    with pytest.raises(DeploymentError) as failed:
        local_cloud.deploy_template(tmp_path, parameters={"LayerArn": "my-layer"})

    # Then the function failed to create with Lambda's validation error, no Python words
    message = str(failed.value)
    assert "Value 'my-layer' at 'layers' failed to satisfy constraint" in message
    assert "unpack" not in message
