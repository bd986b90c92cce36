"""A cloud assembly deployed on the engine (issue 29): assets published, Python functions run in
process from them, what the engine cannot run skipped with a warning, a re-deploy updating in place.

The assemblies here are written as ``cdk synth`` writes them, without aws-cdk-lib; the project's
own synthesized stacks are deployed in tests/infra, a user's app from the wheel in tests/installed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.apps.deployed import DeploymentError, SkippedResourceWarning

ASSET_HASH = "a1b2c3"
DEFINITION_HASH = "d4e5f6"
STACK = "Shop"
CHARGE_CODE = """import os


def handler(event, context):
    return {"charged": event["amount"], "currency": os.environ["CURRENCY"], "version": VERSION}


VERSION = @VERSION@
"""


def write_app(root: Path, *, version: int = 1, extra_resources: dict[str, Any] | None = None) -> Path:
    """A one-stack app: a function from an asset folder, one of inline code, a table, and a state
    machine from a definition asset that calls the first and writes to the table."""
    (root / f"asset.{ASSET_HASH}" / "billing").mkdir(parents=True, exist_ok=True)
    (root / f"asset.{ASSET_HASH}" / "billing" / "__init__.py").write_text("")
    (root / f"asset.{ASSET_HASH}" / "billing" / "charge.py").write_text(
        CHARGE_CODE.replace("@VERSION@", str(version))
    )
    definition = {
        "StartAt": "Charge",
        "States": {
            "Charge": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": "${ChargeArn}", "Payload.$": "$"},
                "OutputPath": "$.Payload",
                "Next": "Record",
            },
            "Record": {
                "Type": "Task",
                "Resource": "arn:aws:states:::dynamodb:putItem",
                "Parameters": {"TableName": "${TableName}", "Item": {"id": {"S.$": "$.currency"}}},
                "ResultPath": None,
                "End": True,
            },
        },
    }
    (root / f"asset.{DEFINITION_HASH}.json").write_text(json.dumps(definition))
    bucket = {"Fn::Sub": "cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}"}
    resources = {
        "ChargeRole": {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": {}}},
        "Charge": {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "Code": {"S3Bucket": bucket, "S3Key": f"{ASSET_HASH}-{version}.zip"},
                "Handler": "billing.charge.handler",
                "Runtime": "python3.12",
                "Role": {"Fn::GetAtt": ["ChargeRole", "Arn"]},
                "Environment": {"Variables": {"CURRENCY": "EUR"}},
                "Timeout": 5,
            },
        },
        "Hello": {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "Code": {"ZipFile": "def handler(event, context):\n    return 'hello ' + event['name']\n"},
                "Handler": "index.handler",
                "Runtime": "python3.12",
                "Role": {"Fn::GetAtt": ["ChargeRole", "Arn"]},
            },
        },
        "Records": {
            "Type": "AWS::DynamoDB::Table",
            "Properties": {
                "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
                "BillingMode": "PAY_PER_REQUEST",
                "TimeToLiveSpecification": {"AttributeName": "expiration", "Enabled": True},
            },
        },
        "Checkout": {
            "Type": "AWS::StepFunctions::StateMachine",
            "Properties": {
                "RoleArn": {"Fn::GetAtt": ["ChargeRole", "Arn"]},
                "DefinitionS3Location": {"Bucket": bucket, "Key": f"{DEFINITION_HASH}.json"},
                "DefinitionSubstitutions": {
                    "ChargeArn": {"Fn::GetAtt": ["Charge", "Arn"]},
                    "TableName": {"Ref": "Records"},
                },
            },
        },
        **(extra_resources or {}),
    }
    template = {
        "Parameters": {
            "BootstrapVersion": {
                "Type": "AWS::SSM::Parameter::Value<String>",
                "Default": "/cdk-bootstrap/hnb659fds/version",
            }
        },
        "Resources": resources,
        "Outputs": {"TableName": {"Value": {"Ref": "Records"}}},
    }
    (root / f"{STACK}.template.json").write_text(json.dumps(template))
    destination = {"bucketName": "cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}"}
    assets = {
        "version": "55.0.0",
        "files": {
            ASSET_HASH: {
                "source": {"path": f"asset.{ASSET_HASH}", "packaging": "zip"},
                "destinations": {"d": {**destination, "objectKey": f"{ASSET_HASH}-{version}.zip"}},
            },
            DEFINITION_HASH: {
                "source": {"path": f"asset.{DEFINITION_HASH}.json", "packaging": "file"},
                "destinations": {"d": {**destination, "objectKey": f"{DEFINITION_HASH}.json"}},
            },
        },
    }
    (root / f"{STACK}.assets.json").write_text(json.dumps(assets))
    metadata = {f"/{STACK}/Checkout/Resource": [{"type": "aws:cdk:logicalId", "data": "Checkout"}]}
    manifest = {
        "version": "55.0.0",
        "artifacts": {
            f"{STACK}.assets": {"type": "cdk:asset-manifest", "properties": {"file": f"{STACK}.assets.json"}},
            STACK: {
                "type": "aws:cloudformation:stack",
                "environment": "aws://unknown-account/unknown-region",
                "properties": {
                    "templateFile": f"{STACK}.template.json",
                    "requiresBootstrapStackVersion": 6,
                    "bootstrapStackVersionSsmParameter": "/cdk-bootstrap/hnb659fds/version",
                },
                "dependencies": [f"{STACK}.assets"],
                "metadata": metadata,
            },
        },
    }
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    return write_app(tmp_path / "cdk.out")


def test_an_assembly_deploys_and_its_machine_runs_its_asset_function(local_cloud: LocalCloud, app_dir: Path):
    # When the assembly is deployed
    deployed = local_cloud.deploy_cdk_out(app_dir)
    shop = deployed.stack(STACK)
    # Then the machine (found by construct path) runs the function from its asset, with its environment
    checkout = shop.arn("Checkout")
    assert shop.resource("Checkout").path == "Shop/Checkout/Resource"
    result = local_cloud.run(checkout, {"amount": 12})
    assert result.status == "SUCCEEDED", result.cause
    assert result.output == {"charged": 12, "currency": "EUR", "version": 1}
    # And wrote to the stack's own table, whose name the stack's output gives
    assert shop.outputs["TableName"] == shop.physical_id("Records")
    items = local_cloud.dynamodb.scan(TableName=shop.outputs["TableName"])["Items"]
    assert items == [{"id": {"S": "EUR"}}]
    # And the inline function runs too, through the Lambda API
    answer = local_cloud.client("lambda").invoke(
        FunctionName=shop.physical_id("Hello"), Payload=b'{"name": "you"}'
    )
    assert json.loads(answer["Payload"].read()) == "hello you"
    # And the bootstrap version parameter is there, as `cdk bootstrap` leaves it
    parameter = local_cloud.client("ssm").get_parameter(Name="/cdk-bootstrap/hnb659fds/version")["Parameter"]
    assert int(parameter["Value"]) >= 6


def test_a_redeploy_updates_in_place_runs_the_new_code_and_keeps_the_items(
    local_cloud: LocalCloud, app_dir: Path
):
    # Given a deployed app that ran once
    first = local_cloud.deploy_cdk_out(app_dir).stack()
    local_cloud.run(first.arn("Checkout"), {"amount": 1})
    # When the user changes their function, synthesizes again, and deploys again
    write_app(app_dir, version=2)
    again = local_cloud.deploy_cdk_out(app_dir).stack()
    # Then the stack was updated: the same table with its item, the same machine, the new code
    assert again.updated
    assert again.physical_id("Records") == first.physical_id("Records")
    assert local_cloud.dynamodb.scan(TableName=again.physical_id("Records"))["Count"] == 1
    assert again.arn("Checkout") == first.arn("Checkout")
    assert local_cloud.run(again.arn("Checkout"), {"amount": 2}).output["version"] == 2


def test_an_unsupported_resource_warns_once_and_the_rest_deploys(local_cloud: LocalCloud, tmp_path: Path):
    # Given an app with a custom resource (its provider a Java function) and an ECS cluster
    extra = {
        "Provider": {
            "Type": "AWS::Lambda::Function",
            "Properties": {"Runtime": "java21", "Handler": "index.handler"},
        },
        "Seed": {
            "Type": "Custom::SeedTable",
            "Properties": {"ServiceToken": {"Fn::GetAtt": ["Provider", "Arn"]}},
        },
        "Cluster": {"Type": "AWS::ECS::Cluster"},
    }
    app = write_app(tmp_path / "cdk.out", extra_resources=extra)
    # When it is deployed
    with pytest.warns(SkippedResourceWarning) as warned:
        shop = local_cloud.deploy_cdk_out(app).stack()
    # Then one line names each skipped resource and its type, and the rest runs
    assert sorted(str(w.message) for w in warned) == [
        "Shop: skipped Cluster (AWS::ECS::Cluster): the engine does not run this resource type",
        "Shop: skipped Provider (AWS::Lambda::Function): runtime java21: only Python and Node.js zip functions run in the engine",
        "Shop: skipped Seed (Custom::SeedTable): custom resources' providers are not run by the engine",
    ]
    assert {"Provider", "Seed", "Cluster"}.isdisjoint(shop.resources)
    assert local_cloud.run(shop.arn("Checkout"), {"amount": 3}).status == "SUCCEEDED"


def test_a_needed_unsupported_resource_is_stood_in_for_by_default(local_cloud: LocalCloud, tmp_path: Path):
    # Given a machine whose definition names a Java function, which the engine cannot run
    extra = {
        "Java": {
            "Type": "AWS::Lambda::Function",
            "Properties": {"Runtime": "java21", "Handler": "index.handler"},
        },
        "UsesJava": {
            "Type": "AWS::StepFunctions::StateMachine",
            "Properties": {
                "RoleArn": "arn:aws:iam::123456789012:role/r",
                "DefinitionString": {
                    "Fn::Sub": '{"StartAt":"Call","States":{"Call":{"Type":"Task",'
                    '"Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"${Java.Arn}"},'
                    '"End":true}}}'
                },
            },
        },
    }
    app = write_app(tmp_path / "cdk.out", extra_resources=extra)
    # When it is deployed
    with pytest.warns(SkippedResourceWarning) as warned:
        shop = local_cloud.deploy_cdk_out(app).stack()
    # Then one line says why the function was stood in for, and the machine calling it is deployed
    arn = "arn:aws:lambda:us-east-1:123456789012:function:Shop-Java-STANDIN"
    assert [str(w.message) for w in warned] == [
        "Shop: stood in for Java (AWS::Lambda::Function) (runtime java21: only Python and Node.js zip "
        f"functions run in the engine): not deployed; its references are {arn}, which does not exist here"
    ]
    assert "Java" not in shop.resources
    # And a call to it fails as a call to a function that does not exist
    run = local_cloud.run(shop.arn("UsesJava"), {})
    assert (run.status, run.error) == ("FAILED", "Lambda.ResourceNotFoundException")


def firehose_app(root: Path) -> Path:
    """The app, and a machine that records each order to a Kinesis Firehose stream (a type the
    engine does not run) by its name, then answers with the stream's ARN."""
    extra = {
        "Stream": {"Type": "AWS::KinesisFirehose::DeliveryStream", "Properties": {}},
        "Audit": {
            "Type": "AWS::StepFunctions::StateMachine",
            "Properties": {
                "RoleArn": "arn:aws:iam::123456789012:role/r",
                "DefinitionString": {
                    "Fn::Sub": json.dumps(
                        {
                            "StartAt": "Record",
                            "States": {
                                "Record": {
                                    "Type": "Task",
                                    "Resource": "arn:aws:states:::aws-sdk:firehose:putRecord",
                                    "Parameters": {
                                        "DeliveryStreamName": "${Stream}",
                                        "Record": {"Data": "x"},
                                    },
                                    "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Named"}],
                                    "End": True,
                                },
                                "Named": {
                                    "Type": "Pass",
                                    "Parameters": {"arn": "${Stream.Arn}", "error.$": "$.Error"},
                                    "End": True,
                                },
                            },
                        }
                    )
                },
            },
        },
    }
    return write_app(root, extra_resources=extra)


def test_a_resource_stood_in_for_is_named_and_a_call_to_it_fails_as_a_missing_one(
    local_cloud: LocalCloud, tmp_path: Path
):
    # Given an app whose machine needs a Firehose stream, a type the engine does not run
    app = firehose_app(tmp_path / "cdk.out")

    # When it is deployed with the stream stood in for on request, by its type
    with pytest.warns(SkippedResourceWarning) as warned:
        shop = local_cloud.deploy_cdk_out(app, stand_in=["AWS::KinesisFirehose::*"]).stack()

    # Then one line names the stand-in and what it resolves to, the rest of the app runs, and a
    # call to the stream fails as a call to a stream that does not exist
    arn = "arn:aws:firehose:us-east-1:123456789012:deliverystream/Shop-Stream-STANDIN"
    assert [str(w.message) for w in warned] == [
        f"Shop: stood in for Stream (AWS::KinesisFirehose::DeliveryStream): not deployed; its references are {arn}, which does not exist here"
    ]
    assert "Stream" not in shop.resources
    assert local_cloud.run(shop.arn("Checkout"), {"amount": 3}).status == "SUCCEEDED"
    audit = local_cloud.run(shop.arn("Audit"), {})
    assert audit.status == "SUCCEEDED", audit.cause
    assert audit.output == {"arn": arn, "error": "Firehose.ResourceNotFoundException"}


def test_a_failed_stack_leaves_nothing_that_blocks_a_retry(local_cloud: LocalCloud, tmp_path: Path):
    # Given an app whose machine's definition asset is broken
    app = write_app(tmp_path / "cdk.out")
    (app / f"asset.{DEFINITION_HASH}.json").write_text('{"StartAt": "Nowhere", "States": {}}')
    # When it is deployed, then the error names the resource and CreateStateMachine's refusal
    with pytest.raises(
        DeploymentError,
        match=r"^Shop: Checkout \(AWS::StepFunctions::StateMachine\) failed to create: Invalid State Machine Definition",
    ):
        local_cloud.deploy_cdk_out(app)
    # And the rolled-back stack was deleted, with what it had made
    assert local_cloud.dynamodb.list_tables()["TableNames"] == []
    assert [
        s["StackStatus"] for s in local_cloud.client("cloudformation").list_stacks()["StackSummaries"]
    ] in ([], ["DELETE_COMPLETE"])
    # And after the user mends it, the deployment goes through
    write_app(app)
    assert (
        local_cloud.run(local_cloud.deploy_cdk_out(app).stack().arn("Checkout"), {"amount": 1}).status
        == "SUCCEEDED"
    )


@pytest.mark.sfn_cdk_out("cdk-out-of-this-test")
def test_the_cdk_app_fixture_deploys_the_marked_assembly(request: pytest.FixtureRequest, tmp_path: Path):
    # Given the assembly where the marker (relative to this test's folder) says
    here = Path(request.path).parent / "cdk-out-of-this-test"
    write_app(here)
    try:
        # When a test asks for cdk_app
        app = request.getfixturevalue("cdk_app")
        cloud = request.getfixturevalue("local_cloud")
        # Then it is deployed on that test's local_cloud
        assert cloud.run(app.stack(STACK).arn("Checkout"), {"amount": 5}).output["charged"] == 5
    finally:
        import shutil

        shutil.rmtree(here)


def test_every_moto_internal_the_deployment_reads_is_checked():
    from sfn_idempotency.local.apps import cloud_assembly
    from sfn_idempotency.local.compat.patching import missing

    assert missing(cloud_assembly.PATCHES) == []
    assert os.path.basename(cloud_assembly.__file__) == "cloud_assembly.py"
