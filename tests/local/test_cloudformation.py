"""Stacks (issue 29, fixes 38 to 40): what moto's CloudFormation creates is what the Step Functions,
DynamoDB and SQS APIs answer, and what the engine runs."""

from __future__ import annotations

import datetime
import json
from typing import Any

from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.compat.cloudformation import definition_of, generated_name

ROLE = "arn:aws:iam::123456789012:role/stack-machines"
PASS_DEFINITION = {
    "StartAt": "Hello",
    "States": {"Hello": {"Type": "Pass", "Result": "${Greeting}", "End": True}},
}
CAPABILITIES = ["CAPABILITY_IAM"]


def deploy(
    cloud: LocalCloud, name: str, resources: dict[str, Any], outputs: dict[str, Any] | None = None
) -> dict[str, str]:
    """Create (or update) a stack; its physical ids by logical id."""
    cloudformation = cloud.client("cloudformation")
    template = json.dumps({"Resources": resources, **({"Outputs": outputs} if outputs else {})})
    existing = [
        s
        for s in cloudformation.list_stacks()["StackSummaries"]
        if s["StackName"] == name and s["StackStatus"] != "DELETE_COMPLETE"
    ]
    if existing:
        cloudformation.update_stack(StackName=name, TemplateBody=template, Capabilities=CAPABILITIES)
    else:
        cloudformation.create_stack(StackName=name, TemplateBody=template, Capabilities=CAPABILITIES)
    summaries = cloudformation.list_stack_resources(StackName=name)["StackResourceSummaries"]
    return {s["LogicalResourceId"]: s["PhysicalResourceId"] for s in summaries}


def machine(**properties: Any) -> dict[str, Any]:
    return {"Type": "AWS::StepFunctions::StateMachine", "Properties": {"RoleArn": ROLE, **properties}}


def test_a_stacks_state_machine_is_the_apis(local_cloud: LocalCloud):
    # Given a stack with a state machine built from Fn::Join, Ref and a substitution
    resources = {
        "Topic": {"Type": "AWS::SNS::Topic"},
        "Greeter": machine(
            DefinitionString={
                "Fn::Join": [
                    "",
                    [
                        '{"StartAt":"Hello","States":{"Hello":{"Type":"Pass","Result":{"topic":"',
                        {"Ref": "Topic"},
                        '","greeting":"${Greeting}"},"End":true}}}',
                    ],
                ]
            },
            DefinitionSubstitutions={"Greeting": {"Fn::Sub": "hello from ${AWS::Region}"}},
        ),
    }
    # When the stack is created
    physical = deploy(local_cloud, "greeter", resources)
    arn = physical["Greeter"]
    # Then the Step Functions API lists and describes it
    listed = [m["stateMachineArn"] for m in local_cloud.sfn.list_state_machines()["stateMachines"]]
    assert listed == [arn]
    described = local_cloud.sfn.describe_state_machine(stateMachineArn=arn)
    assert described["type"] == "STANDARD"
    assert described["roleArn"] == ROLE
    # And its name is the logical id and 12 letters and digits, as AWS names it
    assert described["name"].startswith("Greeter-")
    assert len(described["name"]) == len("Greeter-") + 12
    # And it runs the definition with the references and the substitution put in
    result = local_cloud.run(arn, {})
    assert result.output == {"topic": physical["Topic"], "greeting": "hello from us-east-1"}


def test_a_definition_from_s3_with_its_type_logging_and_tracing(local_cloud: LocalCloud):
    # Given the definition in a bucket (as CDK's DefinitionBody.from_file puts it) and a log group
    s3 = local_cloud.client("s3")
    s3.create_bucket(Bucket="assets")
    s3.put_object(Bucket="assets", Key="greeter.json", Body=json.dumps(PASS_DEFINITION).encode())
    resources = {
        "Logs": {"Type": "AWS::Logs::LogGroup"},
        "Greeter": machine(
            DefinitionS3Location={"Bucket": "assets", "Key": "greeter.json"},
            DefinitionSubstitutions={"Greeting": "hi"},
            StateMachineType="EXPRESS",
            StateMachineName="greeter",
            LoggingConfiguration={
                "Level": "ALL",
                "IncludeExecutionData": True,
                "Destinations": [
                    {"CloudWatchLogsLogGroup": {"LogGroupArn": {"Fn::GetAtt": ["Logs", "Arn"]}}}
                ],
            },
            TracingConfiguration={"Enabled": True},
        ),
    }
    # When the stack is created
    arn = deploy(local_cloud, "from-s3", resources)["Greeter"]
    # Then the machine is Express, named as asked, and logs where the stack said
    described = local_cloud.sfn.describe_state_machine(stateMachineArn=arn)
    assert (described["name"], described["type"]) == ("greeter", "EXPRESS")
    assert described["loggingConfiguration"]["level"] == "ALL"
    assert described["loggingConfiguration"]["destinations"][0]["cloudWatchLogsLogGroup"][
        "logGroupArn"
    ].startswith("arn:aws:logs:us-east-1:123456789012:log-group:")
    assert described["tracingConfiguration"] == {"enabled": True}
    assert local_cloud.run_sync(arn, {}).output == "hi"


def test_an_update_changes_the_machine_in_place_and_a_delete_removes_it(local_cloud: LocalCloud):
    # Given a stack's machine
    first = deploy(
        local_cloud,
        "updated",
        {"Greeter": machine(Definition=PASS_DEFINITION, DefinitionSubstitutions={"Greeting": "one"})},
    )
    # When the stack is updated with a new definition
    second = deploy(
        local_cloud,
        "updated",
        {"Greeter": machine(Definition=PASS_DEFINITION, DefinitionSubstitutions={"Greeting": "two"})},
    )
    # Then it is the same machine, running the new definition
    assert second["Greeter"] == first["Greeter"]
    assert local_cloud.run(second["Greeter"], {}).output == "two"
    # And when the stack is deleted, the machine is gone
    local_cloud.client("cloudformation").delete_stack(StackName="updated")
    assert local_cloud.sfn.list_state_machines()["stateMachines"] == []


def test_a_new_type_replaces_the_machine(local_cloud: LocalCloud):
    first = deploy(
        local_cloud,
        "replaced",
        {"Greeter": machine(Definition=PASS_DEFINITION, DefinitionSubstitutions={"Greeting": "x"})},
    )
    second = deploy(
        local_cloud,
        "replaced",
        {
            "Greeter": machine(
                Definition=PASS_DEFINITION,
                DefinitionSubstitutions={"Greeting": "x"},
                StateMachineType="EXPRESS",
            )
        },
    )
    listed = local_cloud.sfn.list_state_machines()["stateMachines"]
    assert [m["stateMachineArn"] for m in listed] == [second["Greeter"]] != [first["Greeter"]]
    assert listed[0]["type"] == "EXPRESS"


def test_an_invalid_definition_fails_the_stack_and_rolls_it_back(local_cloud: LocalCloud):
    # Given a stack: a queue, then a machine whose Next names no state
    broken = {"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "Nowhere"}}}
    template = {
        "Resources": {
            "Queue": {"Type": "AWS::SQS::Queue"},
            "Broken": {**machine(Definition=broken), "DependsOn": "Queue"},
        }
    }
    cloudformation = local_cloud.client("cloudformation")
    # When it is created, the call answers (CloudFormation creates the resources after it)
    cloudformation.create_stack(StackName="broken", TemplateBody=json.dumps(template))
    # Then the stack failed with CreateStateMachine's own refusal, and was rolled back
    (stack,) = cloudformation.describe_stacks(StackName="broken")["Stacks"]
    assert stack["StackStatus"] == "ROLLBACK_COMPLETE"
    events = cloudformation.describe_stack_events(StackName="broken")["StackEvents"]
    (failed,) = [e for e in events if e["ResourceStatus"] == "CREATE_FAILED"]
    assert (failed["LogicalResourceId"], failed["ResourceType"]) == (
        "Broken",
        "AWS::StepFunctions::StateMachine",
    )
    assert failed["ResourceStatusReason"].startswith(
        "Invalid State Machine Definition: 'MISSING_TRANSITION_TARGET"
    )
    # And nothing it made is left: no machine, and the queue made before it is gone
    assert local_cloud.sfn.list_state_machines()["stateMachines"] == []
    assert local_cloud.client("sqs").list_queues().get("QueueUrls", []) == []


def test_a_rolled_back_stack_has_no_outputs_and_describes_as_cloudformation(local_cloud: LocalCloud):
    # Given a REST API whose method fails to create, and an output naming its stage (which the
    # failure leaves uncreated: describing it must not try to make it)
    root = {"Fn::GetAtt": ["Api", "RootResourceId"]}
    resources = {
        "Api": {"Type": "AWS::ApiGateway::RestApi", "Properties": {"Name": "api"}},
        "Get": {
            "Type": "AWS::ApiGateway::Method",
            "Properties": {
                "RestApiId": {"Ref": "Api"},
                "ResourceId": root,
                "HttpMethod": "GET",
                "AuthorizationType": "NONE",
                "Integration": {"Uri": "arn:aws:apigateway:us-east-1:states:action/StartExecution"},
            },
        },
        "Deployment": {
            "Type": "AWS::ApiGateway::Deployment",
            "DependsOn": ["Get"],
            "Properties": {"RestApiId": {"Ref": "Api"}},
        },
        "Stage": {
            "Type": "AWS::ApiGateway::Stage",
            "Properties": {
                "RestApiId": {"Ref": "Api"},
                "DeploymentId": {"Ref": "Deployment"},
                "StageName": "prod",
            },
        },
    }
    template = {"Resources": resources, "Outputs": {"Url": {"Value": {"Ref": "Stage"}}}}
    cloudformation = local_cloud.client("cloudformation")

    # When it is created and described
    cloudformation.create_stack(StackName="api", TemplateBody=json.dumps(template))
    (stack,) = cloudformation.describe_stacks(StackName="api")["Stacks"]

    # Then CloudFormation answers (no other service's error leaks into it): rolled back, no outputs
    assert stack["StackStatus"] == "ROLLBACK_COMPLETE"
    assert stack.get("Outputs", []) == []
    events = cloudformation.describe_stack_events(StackName="api")["StackEvents"]
    assert [e["LogicalResourceId"] for e in events if e["ResourceStatus"] == "CREATE_FAILED"] == ["Get"]


def test_a_rule_of_the_stack_starts_its_machine(local_cloud: LocalCloud):
    # Given a stack: a rule whose target is the stack's machine
    resources = {
        "Greeter": machine(Definition=PASS_DEFINITION, DefinitionSubstitutions={"Greeting": "event"}),
        "OnOrder": {
            "Type": "AWS::Events::Rule",
            "Properties": {
                "EventPattern": {"source": ["shop"]},
                "State": "ENABLED",
                "Targets": [{"Id": "Greeter", "Arn": {"Ref": "Greeter"}, "RoleArn": ROLE}],
            },
        },
    }
    arn = deploy(local_cloud, "rules", resources)["Greeter"]
    # When an event matches
    local_cloud.put_event("shop", "Order", {"orderId": "o-1"})
    # Then the machine ran once, with the event
    local_cloud.wait_until(lambda: len(local_cloud.executions(arn)) == 1, what="the rule's execution")
    (execution,) = local_cloud.executions(arn)
    assert local_cloud.wait(execution).output == "event"


def test_a_queue_policy_is_set_on_its_queues(local_cloud: LocalCloud):
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "events.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": "*",
            }
        ],
    }
    resources = {
        "DeadLetters": {"Type": "AWS::SQS::Queue"},
        "DeadLettersPolicy": {
            "Type": "AWS::SQS::QueuePolicy",
            "Properties": {"Queues": [{"Ref": "DeadLetters"}], "PolicyDocument": policy},
        },
    }
    url = deploy(local_cloud, "queues", resources)["DeadLetters"]
    attributes = local_cloud.client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"])[
        "Attributes"
    ]
    assert json.loads(attributes["Policy"]) == policy


def test_a_stacks_subscriptions_deliver_as_their_attributes_say(local_cloud: LocalCloud):
    # Given a stack whose topic has a queue subscribed raw, with a filter policy, and an e-mail address
    resources = {
        "Orders": {"Type": "AWS::SNS::Topic"},
        "Placed": {"Type": "AWS::SQS::Queue"},
        "PlacedSubscription": {
            "Type": "AWS::SNS::Subscription",
            "Properties": {
                "TopicArn": {"Ref": "Orders"},
                "Protocol": "sqs",
                "Endpoint": {"Fn::GetAtt": ["Placed", "Arn"]},
                "RawMessageDelivery": True,
                "FilterPolicy": {"kind": ["order"]},
            },
        },
        "OpsSubscription": {
            "Type": "AWS::SNS::Subscription",
            "Properties": {"TopicArn": {"Ref": "Orders"}, "Protocol": "email", "Endpoint": "ops@example.com"},
        },
    }
    deployed = deploy(local_cloud, "subscriptions", resources)
    topic, queue = deployed["Orders"], deployed["Placed"]

    # When an order and something else are published
    sns = local_cloud.client("sns")
    for kind in ("order", "refund"):
        sns.publish(
            TopicArn=topic,
            Message=f"a {kind}",
            MessageAttributes={"kind": {"DataType": "String", "StringValue": kind}},
        )

    # Then the queue got the order alone, as it was published, and the e-mail subscription is there
    messages = local_cloud.client("sqs").receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]
    assert [message["Body"] for message in messages] == ["a order"]
    subscribed = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
    assert sorted((s["Protocol"], s["Endpoint"].rsplit(":", 1)[-1]) for s in subscribed) == [
        ("email", "ops@example.com"),
        ("sqs", queue.rsplit("/", 1)[-1]),
    ]


def test_a_stacks_metric_filter_counts_and_its_alarms_are_there_until_deleted(local_cloud: LocalCloud):
    # Given a stack with a log group, a metric filter on it, and two alarms (one with dimensions,
    # one on a math expression), as CDK writes them
    metric = {"Namespace": "MyApp", "MetricName": "Errors"}
    resources = {
        "Logs": {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": "/my/app"}},
        "ErrorsFilter": {
            "Type": "AWS::Logs::MetricFilter",
            "Properties": {
                "LogGroupName": {"Ref": "Logs"},
                "FilterPattern": '{ $.level = "ERROR" }',
                "MetricTransformations": [
                    {"MetricNamespace": "MyApp", "MetricName": "Errors", "MetricValue": "1"}
                ],
            },
        },
        "ErrorsAlarm": {
            "Type": "AWS::CloudWatch::Alarm",
            "Properties": {
                **metric,
                "Dimensions": [{"Name": "Service", "Value": "payments"}],
                "Statistic": "Sum",
                "Period": 300,
                "EvaluationPeriods": 1,
                "Threshold": 1,
                "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            },
        },
        "RateAlarm": {
            "Type": "AWS::CloudWatch::Alarm",
            "Properties": {
                "Metrics": [
                    {
                        "Id": "errors",
                        "MetricStat": {"Metric": metric, "Period": 300, "Stat": "Sum"},
                        "ReturnData": False,
                    },
                    {"Id": "rate", "Expression": "errors / 5", "ReturnData": True},
                ],
                "EvaluationPeriods": 3,
                "Threshold": 10,
                "ComparisonOperator": "GreaterThanThreshold",
            },
        },
    }
    deploy(local_cloud, "observed", resources)
    cloudwatch, logs = local_cloud.client("cloudwatch"), local_cloud.client("logs")

    # Then the alarms are CloudWatch's, as the template says them
    alarms = {
        alarm.get("MetricName", "rate"): alarm for alarm in cloudwatch.describe_alarms()["MetricAlarms"]
    }
    assert alarms["Errors"]["Dimensions"] == [{"Name": "Service", "Value": "payments"}]
    assert [query["Id"] for query in alarms["rate"]["Metrics"]] == ["errors", "rate"]
    # And an event the filter matches is counted
    logs.create_log_stream(logGroupName="/my/app", logStreamName="s")
    now = datetime.datetime.now(datetime.UTC)
    logs.put_log_events(
        logGroupName="/my/app",
        logStreamName="s",
        logEvents=[{"timestamp": int(now.timestamp() * 1000), "message": '{"level": "ERROR"}'}],
    )
    points = cloudwatch.get_metric_statistics(
        **metric,
        StartTime=now - datetime.timedelta(minutes=5),
        EndTime=now + datetime.timedelta(minutes=5),
        Period=600,
        Statistics=["Sum"],
    )["Datapoints"]
    assert [point["Sum"] for point in points] == [1.0]

    # When the stack is deleted, Then the filter and the alarms go with it
    local_cloud.client("cloudformation").delete_stack(StackName="observed")
    assert cloudwatch.describe_alarms()["MetricAlarms"] == []
    assert logs.describe_metric_filters()["metricFilters"] == []


def table(**properties: Any) -> dict[str, Any]:
    return {
        "Type": "AWS::DynamoDB::Table",
        "Properties": {
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
            "BillingMode": "PAY_PER_REQUEST",
            **properties,
        },
    }


def test_a_stacks_table_has_its_ttl_and_recovery_and_keeps_its_items_through_an_update(
    local_cloud: LocalCloud,
):
    # Given a table with TTL and point-in-time recovery, holding an item
    ttl = {"AttributeName": "expiration", "Enabled": True}
    name = deploy(local_cloud, "tables", {"Records": table(TimeToLiveSpecification=ttl)})["Records"]
    described_ttl = local_cloud.dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    assert described_ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expiration"}
    local_cloud.dynamodb.put_item(TableName=name, Item={"id": {"S": "k-1"}})
    # When the stack is updated: recovery on, a stream added
    updated = deploy(
        local_cloud,
        "tables",
        {
            "Records": table(
                TimeToLiveSpecification=ttl,
                PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
                StreamSpecification={"StreamViewType": "NEW_IMAGE"},
            )
        },
    )
    # Then it is the same table, with its item, and the new settings
    assert updated["Records"] == name
    assert local_cloud.dynamodb.get_item(TableName=name, Key={"id": {"S": "k-1"}})["Item"] == {
        "id": {"S": "k-1"}
    }
    backups = local_cloud.dynamodb.describe_continuous_backups(TableName=name)["ContinuousBackupsDescription"]
    assert backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "ENABLED"
    assert (
        local_cloud.dynamodb.describe_table(TableName=name)["Table"]["StreamSpecification"]["StreamViewType"]
        == "NEW_IMAGE"
    )


def test_new_keys_replace_the_table(local_cloud: LocalCloud):
    name = deploy(local_cloud, "rekeyed", {"Records": table()})["Records"]
    local_cloud.dynamodb.put_item(TableName=name, Item={"id": {"S": "k-1"}})
    rekeyed = table(
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
    )
    replacement = deploy(local_cloud, "rekeyed", {"Records": rekeyed})["Records"]
    assert replacement != name
    assert local_cloud.dynamodb.list_tables()["TableNames"] == [replacement]
    assert local_cloud.dynamodb.scan(TableName=replacement)["Items"] == []


def test_substitutions_are_plain_text_and_unknown_placeholders_stay():
    properties = {
        "DefinitionString": '{"a":"${Known}","b":"${Unknown}"}',
        "DefinitionSubstitutions": {"Known": "v"},
    }
    assert definition_of(properties, "123456789012") == '{"a":"v","b":"${Unknown}"}'


def test_a_generated_name_fits_the_apis_limit():
    name = generated_name("L" * 200)
    assert len(name) == 80
    assert name.startswith("L" * 67 + "-")
