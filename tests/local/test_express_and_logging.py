"""Express executions started asynchronously (fix 46), Express machines refusing activities (fix 28)
and logging configurations checked as AWS checks them (fix 47); in our own words."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.compat.execution_logs import VALIDATION_STREAM

ROLE = "arn:aws:iam::123456789012:role/express"
EXPRESS_ARN = re.compile(r"^arn:aws:states:us-east-1:123456789012:express:echo:first:[0-9a-f-]{36}$")
ECHO = json.dumps(
    {
        "StartAt": "Echo",
        "States": {"Echo": {"Type": "Pass", "Parameters": {"id.$": "$$.Execution.Id"}, "End": True}},
    }
)


def error_of(refused: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    error: dict[str, Any] = refused.value.response["Error"]
    return error["Code"], error["Message"]


@pytest.fixture
def express_machine(local_cloud: LocalCloud) -> str:
    created = local_cloud.sfn.create_state_machine(name="echo", definition=ECHO, roleArn=ROLE, type="EXPRESS")
    return str(created["stateMachineArn"])


def log_group_arn(local_cloud: LocalCloud, name: str) -> str:
    local_cloud.client("logs").create_log_group(logGroupName=name)
    (group,) = local_cloud.client("logs").describe_log_groups(logGroupNamePrefix=name)["logGroups"]
    return str(group["arn"])


def test_an_express_execution_started_asynchronously_has_the_express_arn(
    local_cloud: LocalCloud, express_machine: str
):
    # When an Express execution is started with StartExecution
    started = local_cloud.sfn.start_execution(stateMachineArn=express_machine, name="first", input="{}")
    # Then its ARN is of the express form, and so is the Execution.Id its states see
    assert EXPRESS_ARN.match(started["executionArn"])
    result = local_cloud.wait(started["executionArn"])
    assert (result.status, result.output) == ("SUCCEEDED", {"id": started["executionArn"]})
    # And the engine's own helpers still list and read it (AWS's API does not)
    assert local_cloud.executions(express_machine) == [started["executionArn"]]
    assert result.states == ["Echo"]


@pytest.mark.parametrize(
    "operation",
    ["describe_execution", "stop_execution", "get_execution_history", "describe_state_machine_for_execution"],
)
def test_the_execution_apis_refuse_an_express_execution(
    local_cloud: LocalCloud, express_machine: str, operation: str
):
    # Given an Express execution started asynchronously
    arn = local_cloud.sfn.start_execution(stateMachineArn=express_machine, name="first")["executionArn"]
    local_cloud.wait(arn)
    # When an API that reads or stops an execution is asked about it, then it is refused
    with pytest.raises(ClientError) as refused:
        getattr(local_cloud.sfn, operation)(executionArn=arn)
    assert error_of(refused) == (
        "InvalidArn",
        "Invalid Arn: 'Resource type not valid in this context: express'",
    )


def test_an_express_machine_has_no_execution_list(local_cloud: LocalCloud, express_machine: str):
    # When its executions are listed, then that is refused; a Standard machine's are listed
    with pytest.raises(ClientError) as refused:
        local_cloud.sfn.list_executions(stateMachineArn=express_machine)
    assert error_of(refused) == (
        "StateMachineTypeNotSupported",
        "This operation is not supported by this type of state machine",
    )
    standard = local_cloud.sfn.create_state_machine(name="standard", definition=ECHO, roleArn=ROLE)
    assert local_cloud.sfn.list_executions(stateMachineArn=standard["stateMachineArn"])["executions"] == []


def test_an_express_machine_refuses_an_activity(local_cloud: LocalCloud):
    # Given an activity, and a machine whose Task is that activity
    activity = local_cloud.sfn.create_activity(name="work")["activityArn"]
    definition = json.dumps(
        {"StartAt": "Work", "States": {"Work": {"Type": "Task", "Resource": activity, "End": True}}}
    )
    # When it is created as an Express machine, then it is refused; as a Standard one it is not
    with pytest.raises(ClientError) as refused:
        local_cloud.sfn.create_state_machine(
            name="worker", definition=definition, roleArn=ROLE, type="EXPRESS"
        )
    assert error_of(refused) == (
        "InvalidDefinition",
        "Invalid State Machine Definition: 'SCHEMA_VALIDATION_FAILED: Express state machine does not "
        "support Activity ARN at /States/Work/Resource'",
    )
    assert local_cloud.sfn.create_state_machine(name="worker", definition=definition, roleArn=ROLE)[
        "stateMachineArn"
    ]


def test_logging_to_a_missing_group_is_refused(local_cloud: LocalCloud):
    # Given a log group that was deleted
    arn = log_group_arn(local_cloud, "/gone")
    local_cloud.client("logs").delete_log_group(logGroupName="/gone")
    logging = {"level": "ALL", "destinations": [{"cloudWatchLogsLogGroup": {"logGroupArn": arn}}]}
    # When a machine is created to log there, then it is refused, and no machine was made
    with pytest.raises(ClientError) as refused:
        local_cloud.sfn.create_state_machine(
            name="logger", definition=ECHO, roleArn=ROLE, loggingConfiguration=logging
        )
    assert error_of(refused) == (
        "InvalidLoggingConfiguration",
        "Invalid Logging Configuration: Log Destination not found.",
    )
    assert local_cloud.sfn.list_state_machines()["stateMachines"] == []


@pytest.mark.parametrize(
    "logging",
    [
        {"level": "ERROR"},
        {"level": "ALL", "destinations": []},
        {"level": "OFF", "destinations": [{"cloudWatchLogsLogGroup": {"logGroupArn": "{arn}"}}] * 2},
    ],
    ids=["a level without destination", "an empty destination list", "two destinations"],
)
def test_a_logging_configuration_names_one_destination(local_cloud: LocalCloud, logging: dict[str, Any]):
    arn = log_group_arn(local_cloud, "/one")
    logging = json.loads(json.dumps(logging).replace("{arn}", arn))
    with pytest.raises(ClientError) as refused:
        local_cloud.sfn.create_state_machine(
            name="logger", definition=ECHO, roleArn=ROLE, loggingConfiguration=logging
        )
    assert error_of(refused) == (
        "InvalidLoggingConfiguration",
        "Invalid Logging Configuration: Must specify exactly one Log Destination.",
    )


def test_a_machine_that_logs_checks_its_group_with_a_stream_of_its_own(local_cloud: LocalCloud):
    # Given a log group, and a machine created to log there (and one that logs nothing at all)
    arn = log_group_arn(local_cloud, "/runs")
    logging = {"level": "ALL", "destinations": [{"cloudWatchLogsLogGroup": {"logGroupArn": arn}}]}
    local_cloud.sfn.create_state_machine(name="quiet", definition=ECHO, roleArn=ROLE, loggingConfiguration={})
    machine = local_cloud.sfn.create_state_machine(
        name="logger", definition=ECHO, roleArn=ROLE, loggingConfiguration=logging
    )["stateMachineArn"]
    # When it runs once
    local_cloud.run(machine, {})
    # Then the group holds AWS's validation stream and the execution's stream, in that order
    streams = local_cloud.client("logs").describe_log_streams(logGroupName="/runs")["logStreams"]
    assert [s["logStreamName"] for s in streams] == [VALIDATION_STREAM, f"states/{machine}"]
