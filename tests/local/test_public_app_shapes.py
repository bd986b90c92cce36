"""Templates shaped as public SAM apps write them (issue 51), each cause in a small app of our own:
YAML as the SAM CLI reads it, definitions as CloudFormation's resource provider builds them, the
resource types and attributes public apps use, and what the engine cannot run stood in for."""

from __future__ import annotations

import io
import json
import socket
import sys
import warnings
import zipfile
from pathlib import Path

import httpx
import pytest

from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.apps.deployed import DeploymentError, SkippedResourceWarning
from sfn_idempotency.local.apps.sam_templates import TemplateError
from sfn_idempotency.local.runtimes.python import PythonVersionWarning
from tests.servers import free_port

# An IAM policy's Version unquoted (a YAML date), an activity, and attributes moto's models lacked.
RESOURCES = """\
AWSTemplateFormatVersion: 2010-09-09
Transform: AWS::Serverless-2016-10-31
Resources:
  Work:
    Type: AWS::StepFunctions::Activity
    Properties:
      Name: work
  Uploads:
    Type: AWS::S3::Bucket
  Alerts:
    Type: AWS::SNS::Topic
  Jobs:
    Type: AWS::SQS::Queue
  Catalog:
    Type: AWS::Glue::Database
    Properties:
      CatalogId: !Ref AWS::AccountId
      DatabaseInput:
        Name: catalog
  Machine:
    Type: AWS::Serverless::StateMachine
    Properties:
      DefinitionUri: statemachine/machine.asl.yaml
      DefinitionSubstitutions:
        WaitSeconds: 0
        Strict: true
        ActivityArn: !Ref Work
        BucketName: !GetAtt Uploads.BucketName
        TopicArn: !GetAtt Alerts.TopicArn
        QueueUrl: !GetAtt Jobs.QueueUrl
        Database: !Ref Catalog
      Policies:
        - Version: 2012-10-17
          Statement:
            - Effect: Allow
              Action: states:*
              Resource: "*"
"""
TEMPLATE = RESOURCES + "Outputs:\n  ActivityName:\n    Value: !GetAtt Work.Name\n"
# A YAML definition: CloudFormation puts the substitutions into its text before reading it, so
# ${WaitSeconds} is a number and ${Strict} a boolean.
DEFINITION = """\
StartAt: Pause
States:
  Pause:
    Type: Wait
    Seconds: ${WaitSeconds}
    Next: Named
  Named:
    Type: Pass
    Result:
      strict: ${Strict}
      activity: ${ActivityArn}
      bucket: ${BucketName}
      topic: ${TopicArn}
      queue: ${QueueUrl}
      database: ${Database}
    End: true
"""


def write_app(
    root: Path, template: str = TEMPLATE, definition: tuple[str, str] = ("machine.asl.yaml", DEFINITION)
) -> Path:
    (root / "statemachine").mkdir(parents=True)
    (root / "template.yaml").write_text(template)
    (root / "statemachine" / definition[0]).write_text(definition[1])
    return root


def test_an_app_as_public_templates_write_it_deploys_and_runs(local_cloud: LocalCloud, tmp_path: Path):
    # Given an app with an unquoted policy Version, an activity, GetAtt BucketName, TopicArn and QueueUrl, a
    # YAML definition with number and boolean substitutions, and a Glue database the engine lacks
    app = write_app(tmp_path / "shop")
    # When it is deployed
    with pytest.warns(SkippedResourceWarning) as warned:
        stack = local_cloud.deploy_template(app)
    # Then only the database is stood in for, in one line that says why
    assert [str(w.message) for w in warned] == [
        "shop: stood in for Catalog (AWS::Glue::Database) (the engine does not run this resource type): "
        "not deployed; its references are arn:aws:glue:us-east-1:123456789012:database/shop-Catalog-STANDIN, "
        "which does not exist here"
    ]
    assert stack.outputs == {"ActivityName": "work"}
    activity = "arn:aws:states:us-east-1:123456789012:activity:work"
    assert [a["activityArn"] for a in local_cloud.sfn.list_activities()["activities"]] == [activity]
    # And the machine runs with every substitution in place, typed as the YAML reads it
    run = local_cloud.run(stack.arn("Machine"), {})
    assert run.status == "SUCCEEDED", run.cause
    bucket = local_cloud.client("s3").list_buckets()["Buckets"]
    assert run.output == {
        "strict": True,
        "activity": activity,
        "bucket": next(b["Name"] for b in bucket if b["Name"].startswith("shop-uploads-")),
        "topic": local_cloud.client("sns").list_topics()["Topics"][0]["TopicArn"],
        "queue": local_cloud.client("sqs").list_queues()["QueueUrls"][0],
        "database": "shop-Catalog-STANDIN",
    }


def test_a_select_past_its_list_s_end_fails_the_resource_in_cloudformation_s_words(
    local_cloud: LocalCloud, tmp_path: Path
):
    # Given a template that selects the fourth part of a parameter left empty, as an AWS sample
    # splits its image URI (moto's failure was Python's "list index out of range")
    (tmp_path / "template.yaml").write_text(
        "Parameters:\n  ImageUri:\n    Type: String\n    Default: ''\n"
        "Resources:\n  Jobs:\n    Type: AWS::SQS::Queue\n    Properties:\n"
        "      QueueName: !Select [3, !Split ['.', !Ref ImageUri]]\n"
    )
    # When it is deployed, Then the resource fails as CloudFormation words it, and nothing is left
    with pytest.raises(
        DeploymentError,
        match=r"Jobs \(AWS::SQS::Queue\) failed to create: Template error: Fn::Select cannot select "
        r"nonexistent value at index 3$",
    ):
        local_cloud.deploy_template(tmp_path)
    assert local_cloud.client("sqs").list_queues().get("QueueUrls", []) == []


def test_a_queue_with_a_property_cloudformation_does_not_have_fails_to_create_naming_it(
    local_cloud: LocalCloud, tmp_path: Path
):
    # Given a queue named by a property AWS::SQS::Queue does not have (Name, not QueueName), with
    # a policy on it, as an AWS sample writes it (moto renamed the queue behind its own key, and the
    # policy failed "The specified queue does not exist.")
    (tmp_path / "template.yaml").write_text(
        "Resources:\n  Jobs:\n    Type: AWS::SQS::Queue\n    Properties:\n      Name: jobs\n"
        "  JobsPolicy:\n    Type: AWS::SQS::QueuePolicy\n    Properties:\n"
        "      Queues: [!Ref Jobs]\n      PolicyDocument: {Statement: []}\n"
    )
    # When it is deployed, Then the queue fails, naming the property, and nothing is left
    with pytest.raises(
        DeploymentError,
        match=r"Jobs \(AWS::SQS::Queue\) failed to create: Encountered unsupported property Name$",
    ):
        local_cloud.deploy_template(tmp_path)
    assert local_cloud.client("sqs").list_queues().get("QueueUrls", []) == []


def test_a_managed_policy_s_document_given_as_json_text_is_the_policy(
    local_cloud: LocalCloud, tmp_path: Path
):
    # Given a managed policy whose document is JSON text in a folded YAML string, as an AWS sample
    # writes it (moto wrote the text out as a JSON string, and IAM refused "Syntax errors in policy.")
    statement = {"Effect": "Allow", "Action": ["xray:PutTraceSegments"], "Resource": ["*"]}
    document = json.dumps({"Version": "2012-10-17", "Statement": [statement]}, indent=4)
    (tmp_path / "template.yaml").write_text(
        "Resources:\n  Tracing:\n    Type: AWS::IAM::ManagedPolicy\n    Properties:\n"
        "      PolicyDocument: >\n" + "".join(f"        {line}\n" for line in document.splitlines())
    )

    # When it is deployed, Then the policy is the document the text says
    local_cloud.deploy_template(tmp_path)
    iam = local_cloud.client("iam")
    policy = iam.list_policies(Scope="Local")["Policies"][0]
    version = iam.get_policy_version(PolicyArn=policy["Arn"], VersionId=policy["DefaultVersionId"])
    assert version["PolicyVersion"]["Document"] == {"Version": "2012-10-17", "Statement": [statement]}


def test_a_json_definition_with_a_tab_is_json(local_cloud: LocalCloud, tmp_path: Path):
    # Given a JSON definition indented with tabs (YAML forbids a tab, JSON allows it)
    definition = '{\n\t"StartAt": "Done",\n\t"States": {"Done": {"Type": "Succeed"}}\n}\n'
    template = TEMPLATE.replace("machine.asl.yaml", "machine.asl.json")
    app = write_app(tmp_path / "shop", template, ("machine.asl.json", definition))
    # When it is deployed, then it runs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedResourceWarning)
        stack = local_cloud.deploy_template(app)
    assert local_cloud.run(stack.arn("Machine"), {}).status == "SUCCEEDED"


def test_a_parse_error_names_the_line_of_the_users_own_file(local_cloud: LocalCloud, tmp_path: Path):
    # Given a JSON definition whose fifth line holds a mistake
    definition = json.dumps(
        {"StartAt": "Done", "States": {"Done": {"Type": "Succeed", "Next": ["oops"]}}}, indent=2
    )
    assert '"Next": [' in definition.splitlines()[5]
    template = TEMPLATE.replace("machine.asl.yaml", "machine.asl.json")
    app = write_app(tmp_path / "shop", template, ("machine.asl.json", definition))
    # When it is deployed, then the refusal names that line, as the user's file numbers it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedResourceWarning)
        with pytest.raises(DeploymentError, match=r"line 6:"):
            local_cloud.deploy_template(app)


def test_parameters_without_a_value_are_named_with_the_flag_that_gives_one(
    local_cloud: LocalCloud, tmp_path: Path
):
    # Given a template with two parameters that have no default, and one that has
    parameters = "Parameters:\n  Bucket:\n    Type: String\n  Email:\n    Type: String\n  Stage:\n    Type: String\n    Default: dev\n"
    app = write_app(tmp_path / "shop", TEMPLATE.replace("Resources:\n", parameters + "Resources:\n", 1))
    # When it is deployed with a value for one of them, then the refusal names the other, and how
    with pytest.raises(TemplateError) as refused:
        local_cloud.deploy_template(app, parameters={"Email": "ops@example.com"})
    assert str(refused.value) == (
        "the template's parameter Bucket has no default and no value: give it one with "
        "--parameter-overrides Bucket=VALUE (parameters= in deploy_template)"
    )


def test_an_include_of_a_local_file_and_spaced_sub_variables_deploy_a_served_api(
    local_cloud: LocalCloud, tmp_path: Path
):
    # Given an API whose OpenAPI body is an AWS::Include of a local file, with a CORS OPTIONS
    # method (a MOCK integration, no URI) and a Sub variable written with spaces, and a rule on a
    # bus of the template named by its Ref
    api_body = """\
openapi: 3.0.1
info: {title: shop-api, version: "1.0"}
paths:
  /orders:
    post:
      x-amazon-apigateway-integration:
        type: aws
        httpMethod: POST
        credentials:
          Fn::Sub: arn:aws:iam::${ AWS::AccountId }:role/api
        uri:
          Fn::Sub: arn:aws:apigateway:${ AWS::Region }:states:action/StartSyncExecution
        requestTemplates:
          application/json:
            Fn::Sub: '{"input": "$util.escapeJavaScript($input.json(''$''))", "stateMachineArn": "${ Machine }"}'
        responses:
          default: {statusCode: "200"}
"""
    template = (
        RESOURCES.replace(
            "statemachine/machine.asl.yaml", "statemachine/machine.asl.yaml\n      Type: EXPRESS"
        )
        + """\
  Api:
    Type: AWS::Serverless::Api
    Properties:
      StageName: Prod
      Cors:
        AllowOrigin: "'*'"
      DefinitionBody:
        Fn::Transform:
          Name: AWS::Include
          Parameters:
            Location: api.yaml
  Bus:
    Type: AWS::Events::EventBus
    Properties:
      Name: orders
  OnOrder:
    Type: AWS::Events::Rule
    Properties:
      EventBusName: !Ref Bus
      EventPattern: {source: [shop]}
"""
    )
    app = write_app(tmp_path / "shop", template)
    (app / "api.yaml").write_text(api_body)
    # When it is deployed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedResourceWarning)
        stack = local_cloud.deploy_template(app)
    # Then the included paths are the API's, the rule is on the named bus, and a POST runs the machine
    rest_api = stack.resource("Api").physical_id
    paths = {
        r["path"]: set(r.get("resourceMethods", {}))
        for r in local_cloud.client("apigateway").get_resources(restApiId=rest_api)["items"]
    }
    assert paths["/orders"] == {"POST", "OPTIONS"}
    assert local_cloud.events.list_rules(EventBusName="orders")["Rules"][0]["Name"].startswith("shop-OnOrder")
    answer = httpx.post(f"{next(iter(stack.api_endpoints.values()))}orders", json={}, timeout=30)
    assert answer.status_code == 200, answer.text


def two_free_ports() -> int:
    """A port free with the one after it (the first two stages take them)."""
    for _ in range(50):
        port = free_port()
        with socket.socket() as after:
            try:
                after.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise AssertionError("no two free ports in a row")


def test_the_api_port_goes_to_the_app_s_own_stage_not_sam_s_extra_one(tmp_path: Path):
    # Given an app whose API's stage is Prod (the SAM transform adds a stage named "Stage" beside
    # it), served from a fixed first port
    template = (
        RESOURCES
        + """\
  Api:
    Type: AWS::Serverless::Api
    Properties:
      StageName: Prod
      DefinitionBody:
        openapi: 3.0.1
        info: {title: shop-api, version: "1.0"}
        paths:
          /health:
            get:
              x-amazon-apigateway-integration:
                type: mock
                requestTemplates: {application/json: '{"statusCode": 200}'}
                responses: {default: {statusCode: "200"}}
"""
    )
    app = write_app(tmp_path / "shop", template)
    port = two_free_ports()
    with LocalCloud(api_port=port) as cloud, warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedResourceWarning)
        # When it is deployed
        stack = cloud.deploy_template(app)
        # Then Prod has the port given, and SAM's Stage the one after
        assert sorted(stack.api_endpoints.values()) == [
            f"http://127.0.0.1:{port}/Prod/",
            f"http://127.0.0.1:{port + 1}/Stage/",
        ]


def test_a_node_function_with_inline_code_runs_its_index_module(local_cloud: LocalCloud, tmp_path: Path):
    # Given a Node.js function whose code is inline (Code.ZipFile, through a Fn::Sub list), called
    # by its ARN from a state machine; moto wrote inline code to index.py only (fix 100)
    template = (
        RESOURCES
        + """\
  Seed:
    Type: AWS::Lambda::Function
    Properties:
      Handler: index.handler
      Runtime: nodejs24.x
      Role: !GetAtt SeedRole.Arn
      Code:
        ZipFile:
          Fn::Sub:
            - "exports.handler = async (event) => ({table: '${Table}', got: event});"
            - Table: orders
  SeedRole:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument:
        Version: 2012-10-17
        Statement:
          - Effect: Allow
            Principal: {Service: lambda.amazonaws.com}
            Action: sts:AssumeRole
"""
    )
    template = template.replace(
        "        WaitSeconds: 0\n", "        WaitSeconds: 0\n        SeedArn: !GetAtt Seed.Arn\n"
    )
    definition = (
        'StartAt: Seed\nStates:\n  Seed:\n    Type: Task\n    Resource: "${SeedArn}"\n    End: true\n'
    )
    app = write_app(tmp_path / "shop", template, ("machine.asl.yaml", definition))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedResourceWarning)
        stack = local_cloud.deploy_template(app)
    # When the machine runs, then the function's inline module answered
    run = local_cloud.run(stack.arn("Machine"), {"n": 1})
    assert run.status == "SUCCEEDED", run.cause
    assert run.output == {"table": "orders", "got": {"n": 1}}


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the engine's Python reads this syntax")
def test_a_python_function_newer_than_the_engine_s_python_says_why_it_did_not_load(local_cloud: LocalCloud):
    # Given a python3.13 function whose code uses a 3.12 f-string (quotes reused inside), which a
    # public app's function does and Python 3.11 cannot parse
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("app.py", 'def handler(event, context):\n    return f"{event["name"]}"\n')
    lambda_client = local_cloud.client("lambda")
    role = local_cloud.client("iam").create_role(RoleName="fn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    lambda_client.create_function(
        FunctionName="greet",
        Runtime="python3.13",
        Role=role,
        Handler="app.handler",
        Code={"ZipFile": code.getvalue()},
    )
    # When it is invoked twice
    with pytest.warns(PythonVersionWarning) as warned:
        answers = [lambda_client.invoke(FunctionName="greet", Payload=b'{"name": "x"}') for _ in range(2)]
    # Then it failed as Lambda's runtime reports a module it cannot parse, and one line said why
    for answer in answers:
        assert json.loads(answer["Payload"].read())["errorType"] == "Runtime.UserCodeSyntaxError"
    assert [str(w.message).split(":")[0] for w in warned] == [
        f"greet declares python3.13 and could not be loaded on the engine's Python {sys.version.split()[0]}"
    ]


def test_a_function_s_own_error_at_cold_start_is_not_blamed_on_the_python_version(local_cloud: LocalCloud):
    # Given a function declared for another Python whose module raises an exception of its own as it
    # is imported (a configuration check at cold start)
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr(
            "app.py",
            "class ConfigurationError(Exception):\n    pass\n\n"
            "raise ConfigurationError('TABLE_NAME is not set')\n",
        )
    lambda_client = local_cloud.client("lambda")
    role = local_cloud.client("iam").create_role(RoleName="fn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    other_python = "python3.9" if sys.version_info >= (3, 10) else "python3.13"
    lambda_client.create_function(
        FunctionName="configured",
        Runtime=other_python,
        Role=role,
        Handler="app.handler",
        Code={"ZipFile": code.getvalue()},
    )
    # When it is invoked
    with warnings.catch_warnings():
        warnings.simplefilter("error", PythonVersionWarning)
        answer = lambda_client.invoke(FunctionName="configured", Payload=b"{}")
    # Then it answered its own error, and no line blamed the Python it runs on
    payload = json.loads(answer["Payload"].read())
    assert (payload["errorType"], payload["errorMessage"]) == ("ConfigurationError", "TABLE_NAME is not set")
