"""What `cdk deploy` creates, asserted on the synthesized template."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk.assertions import Match, Template

from sfn_idempotency.flow import provable_key
from sfn_idempotency.flow.definitions import PLACEHOLDER, placeholders, with_lease
from sfn_idempotency.flow.resources import (
    EXECUTION_ENDED_PATTERN,
    IDEMPOTENCY_ASL,
    ORDER_PLACED_PATTERN,
    ORDER_WORKFLOW_ASL,
)
from sfn_idempotency.settings import example_settings
from tests.business_steps import SQS_SEND_STEP
from tests.infra.conftest import Synthesized

DYNAMODB_ITEM_ACTIONS = ["dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]
ASL_TEXT = IDEMPOTENCY_ASL.read_text(encoding="utf-8")
POWERTOOLS_LAYER = Match.string_like_regexp(r"layer:AWSLambdaPowertoolsPythonV3-python313-x86_64:\d+")


def logical_id(template: Template, resource_type: str, path_fragment: str) -> str:
    """The logical id of the one resource of that type whose construct path contains the fragment."""
    found = [
        name
        for name, resource in template.find_resources(resource_type).items()
        if path_fragment in resource.get("Metadata", {}).get("aws:cdk:path", name)
    ]
    assert len(found) == 1, (resource_type, path_fragment, found)
    return found[0]


def role_statements(template: Template, role_id: str) -> list[dict[str, Any]]:
    policies = template.find_resources(
        "AWS::IAM::Policy", {"Properties": {"Roles": Match.array_with([{"Ref": role_id}])}}
    )
    return [
        statement
        for policy in policies.values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_table_is_on_demand_with_ttl_pitr_and_retained(service: Template):
    service.resource_count_is("AWS::DynamoDB::Table", 1)
    service.has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": {
                "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
                "BillingMode": "PAY_PER_REQUEST",
                "TimeToLiveSpecification": {"AttributeName": "expiration", "Enabled": True},
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            },
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
        },
    )


def test_key_lambda_runs_python_313_with_powertools_and_the_validated_environment(service: Template):
    service.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "compute_key.handler.handler",
            "Runtime": "python3.13",
            "Layers": [
                Match.object_like({"Fn::Join": Match.array_with([Match.array_with([POWERTOOLS_LAYER])])})
            ],
            # the exact environment, lease included (computed from the ASL's own Retry policies)
            "Environment": {
                "Variables": Match.exact(with_lease(example_settings({}), ASL_TEXT).to_environment())
            },
            "TracingConfig": {"Mode": "Active"},
        },
    )


def test_business_lambda_timeout_is_the_lease(service: Template):
    settings = example_settings({})
    service.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "place_order.handler.handler",
            "Runtime": "python3.13",
            "Timeout": settings.timeout_seconds,
            "Layers": [
                Match.object_like({"Fn::Join": Match.array_with([Match.array_with([POWERTOOLS_LAYER])])})
            ],
        },
    )


def test_definition_is_the_asl_file_with_every_placeholder_resolved(
    synthesized: Synthesized, service: Template
):
    # Given the state machine's definition asset and substitutions
    machine = logical_id(service, "AWS::StepFunctions::StateMachine", "/OrderWorkflow/StateMachine/")
    properties = service.to_json()["Resources"][machine]["Properties"]
    asset = synthesized.asset_file(properties["DefinitionS3Location"]["Key"])
    substitutions = properties["DefinitionSubstitutions"]

    # Then the uploaded definition is the ASL file, byte for byte
    assert asset.read_bytes() == IDEMPOTENCY_ASL.read_bytes()
    # And every placeholder has a substitution and none is left over
    assert set(substitutions) == placeholders(IDEMPOTENCY_ASL.read_text())
    resolved = PLACEHOLDER.sub(lambda m: json.dumps(substitutions[m[1]])[1:-1], asset.read_text())
    assert placeholders(resolved) == set()
    # And they point at the stack's own resources
    compute_key = logical_id(service, "AWS::Lambda::Function", "/OrderWorkflow/ComputeKeyFunction/")
    place_order = logical_id(service, "AWS::Lambda::Function", "PlaceOrderFunction")
    table = logical_id(service, "AWS::DynamoDB::Table", "Idempotency")
    provable = {"ProvableKey", "KeylessIdempotency", "NoKeyWords", "DisabledWords"}
    assert {name: value for name, value in substitutions.items() if name not in provable} == {
        "ComputeKeyFunctionArn": {"Fn::GetAtt": [compute_key, "Arn"]},
        "BusinessFunctionArn": {"Fn::GetAtt": [place_order, "Arn"]},
        "TableName": {"Ref": table},
    }
    # And the provable key's settings are written in as CloudFormation substitutes them, as they
    # are: each escaped for the JSON string it lands in
    written = {name: json.loads(f'"{substitutions[name]}"') for name in provable}
    assert written["NoKeyWords"] == provable_key.NO_KEY
    assert written["ProvableKey"].startswith("( $event := $states.input;")
    assert "\"orders\" & '#' & $digest($selection)" in written["ProvableKey"]


def test_state_machine_logs_errors_without_execution_data_and_traces(service: Template):
    service.has_resource_properties(
        "AWS::StepFunctions::StateMachine",
        {
            "StateMachineType": "STANDARD",
            "LoggingConfiguration": {
                "Level": "ERROR",
                "IncludeExecutionData": False,
                "Destinations": Match.any_value(),
            },
            "TracingConfiguration": {"Enabled": True},
        },
    )


def test_state_machine_may_touch_only_its_table_and_functions(service: Template):
    # Given the state machine role's statements
    role = logical_id(service, "AWS::IAM::Role", "/OrderWorkflow/StateMachine/Role/")
    statements = role_statements(service, role)
    table = logical_id(service, "AWS::DynamoDB::Table", "Idempotency")
    compute_key = logical_id(service, "AWS::Lambda::Function", "/OrderWorkflow/ComputeKeyFunction/")
    place_order = logical_id(service, "AWS::Lambda::Function", "PlaceOrderFunction")

    # Then DynamoDB: exactly the four item operations, on the table alone
    dynamodb = [s for s in statements if any(a.startswith("dynamodb:") for a in as_list(s["Action"]))]
    assert len(dynamodb) == 1
    assert sorted(as_list(dynamodb[0]["Action"])) == sorted(DYNAMODB_ITEM_ACTIONS)
    assert as_list(dynamodb[0]["Resource"]) == [{"Fn::GetAtt": [table, "Arn"]}]
    # And Lambda: invoke, on the two unqualified function ARNs and the key Lambda's $LATEST, which
    # the redrive fence calls (no version or alias wildcard)
    invoke = [s for s in statements if "lambda:InvokeFunction" in as_list(s["Action"])]
    assert len(invoke) == 1
    assert as_list(invoke[0]["Resource"]) == [
        {"Fn::GetAtt": [compute_key, "Arn"]},
        {"Fn::GetAtt": [place_order, "Arn"]},
        {"Fn::Join": ["", [{"Fn::GetAtt": [compute_key, "Arn"]}, ":$LATEST"]]},
    ]
    # And nothing broader: no other statement, '*' only where AWS accepts nothing else (log delivery, X-Ray)
    assert len(statements) == 4
    for statement in statements:
        assert statement["Effect"] == "Allow"
        actions = as_list(statement["Action"])
        assert not any(a in ("*", "dynamodb:*", "lambda:*") for a in actions)
        if "*" in as_list(statement["Resource"]):
            assert all(a.startswith(("logs:", "xray:")) for a in actions), statement


def test_key_lambda_has_no_dynamodb_rights(service: Template):
    role = logical_id(service, "AWS::IAM::Role", "/OrderWorkflow/ComputeKeyFunction/ServiceRole/")
    actions = [a for s in role_statements(service, role) for a in as_list(s["Action"])]
    assert not [a for a in actions if a.startswith("dynamodb:")]


def test_outputs_name_the_state_machine_and_table(service: Template):
    service.has_output("StateMachineArn", {"Value": {"Ref": Match.string_like_regexp("StateMachine")}})
    service.has_output("TableName", {"Value": {"Ref": Match.string_like_regexp("IdempotencyTable")}})


def test_workflows_share_one_table_and_keep_their_prefixes(synthesized: Synthesized):
    shared = synthesized.shared
    shared.resource_count_is("AWS::DynamoDB::Table", 1)
    table = logical_id(shared, "AWS::DynamoDB::Table", "Shared")
    machines = {
        name: machine
        for name, machine in shared.find_resources("AWS::StepFunctions::StateMachine").items()
        if "/ClaimRelease/" not in machine["Metadata"]["aws:cdk:path"]
    }
    assert len(machines) == 3
    assert [m["Properties"]["DefinitionSubstitutions"]["TableName"] for m in machines.values()] == [
        {"Ref": table}
    ] * 3
    assert sorted(m["Properties"]["StateMachineType"] for m in machines.values()) == [
        "EXPRESS",
        "STANDARD",
        "STANDARD",
    ]
    for prefix in ("payments", "refunds", "shipments"):
        shared.has_resource_properties(
            "AWS::Lambda::Function",
            {"Environment": {"Variables": Match.object_like({"IDEMPOTENCY_KEY_PREFIX": prefix})}},
        )


def test_table_options_customer_key_and_removal_policy(synthesized: Synthesized):
    synthesized.shared.has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": Match.object_like(
                {
                    "SSESpecification": {
                        "SSEEnabled": True,
                        "SSEType": "KMS",
                        "KMSMasterKeyId": Match.any_value(),
                    }
                }
            ),
            "DeletionPolicy": "Delete",
        },
    )


def test_every_role_that_touches_the_encrypted_table_may_use_its_key(synthesized: Synthesized):
    # Given the shared table under a customer-managed key
    shared = synthesized.shared
    key = logical_id(shared, "AWS::KMS::Key", "TableKey")
    machines = shared.find_resources("AWS::StepFunctions::StateMachine")
    # Then every state machine that calls DynamoDB on it (3 workflows, 2 Standard ones' release) may
    # use the key, or DynamoDB would refuse each call
    assert len(machines) == 5
    for machine in machines.values():
        statements = role_statements(shared, machine["Properties"]["RoleArn"]["Fn::GetAtt"][0])
        dynamodb = [s for s in statements if any(a.startswith("dynamodb:") for a in as_list(s["Action"]))]
        kms = [s for s in statements if any(a.startswith("kms:") for a in as_list(s["Action"]))]
        assert dynamodb
        assert len(kms) == 1
        assert sorted(as_list(kms[0]["Action"])) == [
            "kms:Decrypt",
            "kms:DescribeKey",
            "kms:Encrypt",
            "kms:GenerateDataKey",
        ]
        assert kms[0]["Resource"] == {"Fn::GetAtt": [key, "Arn"]}


def test_an_unencrypted_table_grants_no_key_rights(service: Template):
    for policy in service.find_resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            assert not any(action.startswith("kms:") for action in as_list(statement["Action"]))


def test_cdk_nag_aws_solutions_has_no_unacknowledged_findings(synthesized: Synthesized):
    (report,) = synthesized.validation_report["pluginReports"]
    assert report["pluginName"] == "AwsSolutions"
    assert report["conclusion"] == "success"
    assert report["violations"] == []
    acknowledged = report.get("suppressedViolations", [])
    assert acknowledged, "the stack has reviewed findings; the report should list them"
    for finding in acknowledged:
        assert len(finding["reason"]) > 20, finding["ruleName"]


def test_a_non_lambda_business_step_is_wrapped_with_its_own_rights(synthesized: Synthesized):
    # Given the workflow around an SQS send
    shared = synthesized.shared
    machine = logical_id(shared, "AWS::StepFunctions::StateMachine", "/Shipments/StateMachine/")
    properties = shared.to_json()["Resources"][machine]["Properties"]

    # Then its definition is the ASL file's flow with the SQS task as both business states
    definition = json.loads(properties["DefinitionString"])
    for state in ("Execute", "ExecuteWithoutRecord"):
        assert definition["States"][state]["Resource"] == "arn:aws:states:::sqs:sendMessage"
        assert definition["States"][state]["TimeoutSecondsPath"] == "$.idempotency.timeoutSeconds"
    assert definition["States"]["Execute"]["Assign"]["sfnIdempotencyResult"] == {
        "value": SQS_SEND_STEP["ResultSelector"]
    }
    assert set(properties["DefinitionSubstitutions"]) == {
        "ComputeKeyFunctionArn",
        "TableName",
        "OrdersQueueUrl",
        "ProvableKey",
        "KeylessIdempotency",
        "NoKeyWords",
        "DisabledWords",
    }
    # And its role may send to that queue, invoke only the key Lambda, and use the table
    role = logical_id(shared, "AWS::IAM::Role", "/Shipments/StateMachine/Role/")
    statements = role_statements(shared, role)
    queue = logical_id(shared, "AWS::SQS::Queue", "/Orders/")
    assert {
        "Action": "sqs:SendMessage",
        "Effect": "Allow",
        "Resource": {"Fn::GetAtt": [queue, "Arn"]},
    } in statements
    (invoke,) = [s for s in statements if s["Action"] == "lambda:InvokeFunction"]
    compute_key = logical_id(shared, "AWS::Lambda::Function", "/Shipments/ComputeKeyFunction/")
    # (its $LATEST too, as for every workflow: the same code as the unqualified ARN invokes)
    assert as_list(invoke["Resource"]) == [
        {"Fn::GetAtt": [compute_key, "Arn"]},
        {"Fn::Join": ["", [{"Fn::GetAtt": [compute_key, "Arn"]}, ":$LATEST"]]},
    ]


def test_event_rule_reads_the_shared_pattern_and_retries_into_a_dead_letter_queue(service: Template):
    events_machine = logical_id(
        service, "AWS::StepFunctions::StateMachine", "/OrderEventsWorkflow/StateMachine/"
    )
    dead_letter_queue = logical_id(service, "AWS::SQS::Queue", "/OrderPlacedTrigger/DeadLetterQueue/")
    service.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventPattern": json.loads(ORDER_PLACED_PATTERN.read_text()),
            "State": "ENABLED",
            "Targets": [
                Match.object_like(
                    {
                        "Arn": {"Ref": events_machine},
                        "DeadLetterConfig": {"Arn": {"Fn::GetAtt": [dead_letter_queue, "Arn"]}},
                        "RetryPolicy": {"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 185},
                        "RoleArn": Match.any_value(),
                    }
                )
            ],
        },
    )
    service.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Environment": {
                "Variables": Match.object_like({"IDEMPOTENCY_EVENT_KEY_JMESPATH": "detail.orderId"})
            }
        },
    )


def test_the_nested_pipeline_loads_its_asl_and_gets_the_rights_sync_needs(
    synthesized: Synthesized, service: Template
):
    path, asl, child = "/OrderPipeline/", ORDER_WORKFLOW_ASL, "/OrderWorkflow/"
    # Given the nesting state machine and its child
    machine = logical_id(service, "AWS::StepFunctions::StateMachine", f"{path}StateMachine/")
    child_machine = logical_id(service, "AWS::StepFunctions::StateMachine", f"{child}StateMachine/")
    properties = service.to_json()["Resources"][machine]["Properties"]

    # Then its definition is its ASL file, the child substituted
    assert synthesized.asset_file(properties["DefinitionS3Location"]["Key"]).read_bytes() == asl.read_bytes()
    assert properties["DefinitionSubstitutions"] == {"IdempotencyStateMachineArn": {"Ref": child_machine}}
    # And its role may start the child, follow its executions and manage the .sync events rule, nothing more
    statements = role_statements(service, logical_id(service, "AWS::IAM::Role", f"{path}StateMachine/Role/"))
    actions = {a for s in statements for a in as_list(s["Action"])}
    assert {"states:StartExecution", "states:DescribeExecution", "states:StopExecution"} <= actions
    assert {"events:PutTargets", "events:PutRule", "events:DescribeRule"} <= actions
    (start,) = [s for s in statements if s["Action"] == "states:StartExecution"]
    assert start["Resource"] == {"Ref": child_machine}
    (rule,) = [s for s in statements if "events:PutRule" in as_list(s["Action"])]
    assert "StepFunctionsGetEventsForStepFunctionsExecutionRule" in json.dumps(rule["Resource"])
    assert not [a for a in actions if a.startswith(("dynamodb:", "lambda:"))]


def test_each_workflow_releases_abandoned_claims_of_its_own_executions(service: Template):
    # Given the order workflow and its claim release
    workflow = logical_id(service, "AWS::StepFunctions::StateMachine", "/OrderWorkflow/StateMachine/")
    release = logical_id(
        service, "AWS::StepFunctions::StateMachine", "/OrderWorkflow/ClaimRelease/StateMachine/"
    )
    resources = service.to_json()["Resources"]

    # Then the release is an Express workflow on the shared ASL file, triggered by that workflow's ended executions
    assert resources[release]["Properties"]["StateMachineType"] == "EXPRESS"
    assert set(resources[release]["Properties"]["DefinitionSubstitutions"]) == {
        "ComputeKeyFunctionArn",
        "TableName",
        "ProvableKeyOfEndedExecution",
    }
    expected = json.loads(EXECUTION_ENDED_PATTERN.read_text())
    expected["detail"]["stateMachineArn"] = [{"Ref": workflow}]
    service.has_resource_properties(
        "AWS::Events::Rule",
        {"EventPattern": expected, "Targets": [Match.object_like({"Arn": {"Ref": release}})]},
    )
    # And it may only delete items of the table, invoke the workflow's key Lambda, and describe the
    # workflow's executions (whether one runs again, redriven)
    statements = role_statements(
        service, logical_id(service, "AWS::IAM::Role", "/OrderWorkflow/ClaimRelease/StateMachine/Role/")
    )
    actions = sorted(
        a for s in statements for a in as_list(s["Action"]) if not a.startswith(("logs:", "xray:"))
    )
    assert actions == ["dynamodb:DeleteItem", "lambda:InvokeFunction", "states:DescribeExecution"]
    compute_key = logical_id(service, "AWS::Lambda::Function", "/OrderWorkflow/ComputeKeyFunction/")
    (invoke,) = [s for s in statements if s["Action"] == "lambda:InvokeFunction"]
    assert as_list(invoke["Resource"]) == [{"Fn::GetAtt": [compute_key, "Arn"]}]
    (describe,) = [s for s in statements if s["Action"] == "states:DescribeExecution"]
    (executions,) = as_list(describe["Resource"])
    assert json.dumps(executions).count(workflow) == 1  # execution:<the workflow's name>:*
    assert json.dumps(executions).endswith(':*"]]}')
