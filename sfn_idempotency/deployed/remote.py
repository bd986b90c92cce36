"""Deployed state machines (AWS, or any endpoint such as ``serve``): clients, finding the workflow and
its table, and the demo's scenarios against them."""

from __future__ import annotations

import json
from typing import Any

import boto3
from botocore.config import Config

from sfn_idempotency.deployed.executions import (
    entered_states,
    history,
    lambda_invocations,
    wait_for_execution,
)
from sfn_idempotency.deployed.records import plain
from sfn_idempotency.flow.outcomes import Outcome
from sfn_idempotency.lambdas.compute_key.settings import IdempotencySettings

EXECUTION_DEADLINE_SECONDS = 300.0
# Long enough on AWS for a second execution to start, claim and end while the first holds the claim.
DEPLOYED_HOLD_SECONDS = 3.0
DEFAULT_STATE_MACHINE_NAME = "idempotency"  # what `serve` creates
LOCAL_REGION = "us-east-1"  # where `serve` creates it


class NotExactlyOneError(LookupError):
    """None or several candidates where one was expected; the message says which flag names one."""


def client(service: str, endpoint_url: str | None, region: str | None) -> Any:
    """The standard credential and region chain; against an endpoint, placeholders fill what it lacks
    (the local endpoint checks neither), and no host prefix is put before it (TestState's ``sync-``)."""
    if not endpoint_url:
        return boto3.client(service, region_name=region)
    session = boto3.Session(region_name=region)
    credentials = (
        {} if session.get_credentials() else {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
    )
    return session.client(
        service,
        endpoint_url=endpoint_url,
        region_name=session.region_name or LOCAL_REGION,
        config=Config(inject_host_prefix=False),
        **credentials,
    )


def shell_environment(endpoint_url: str, region: str = LOCAL_REGION) -> dict[str, str]:
    """What a shell exports so the AWS CLI and SDKs use ``endpoint_url``: its region, placeholder
    credentials, and no "sync-" host prefix (StartSyncExecution and TestState would go to
    ``sync-127.0.0.1``, a host no resolver knows, and fail after their retries)."""
    return {
        "AWS_ENDPOINT_URL": endpoint_url,
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "AWS_DISABLE_HOST_PREFIX_INJECTION": "true",
    }


def only(kind: str, names: list[str], flag: str) -> str:
    if len(names) != 1:
        raise NotExactlyOneError(
            f"found {len(names)} {kind}s ({', '.join(names) or 'none'}): name one with {flag}"
        )
    return names[0]


def default_state_machine(sfn: Any) -> str:
    """The one named as `serve` names it, else the only one there is."""
    machines = sfn.list_state_machines()["stateMachines"]
    named = [m["stateMachineArn"] for m in machines if m["name"] == DEFAULT_STATE_MACHINE_NAME]
    return (
        named[0]
        if named
        else only("state machine", [m["stateMachineArn"] for m in machines], "--state-machine")
    )


def only_table(dynamodb: Any) -> str:
    return only("table", dynamodb.list_tables()["TableNames"], "--table")


class RemoteTarget:
    """``state_machine_arn`` runs the idempotency flow around a Lambda on ``table_name``."""

    def __init__(
        self,
        sfn: Any,
        dynamodb: Any,
        state_machine_arn: str,
        table_name: str,
        settings: IdempotencySettings,
        *,
        concurrent_hold_seconds: float = DEPLOYED_HOLD_SECONDS,
    ) -> None:
        self.concurrent_hold_seconds = concurrent_hold_seconds
        self.sfn = sfn
        self.dynamodb = dynamodb
        self.state_machine_arn = state_machine_arn
        self.table_name = table_name
        self.settings = settings
        definition = json.loads(sfn.describe_state_machine(stateMachineArn=state_machine_arn)["definition"])
        # The business Lambda, as the deployed definition names it (to count its runs in the history):
        # the flow without a record calls it plainly (Execute picks it or the redrive fence)
        self.business_function_arn = str(
            definition["States"]["ExecuteWithoutRecord"]["Parameters"]["FunctionName"]
        )

    def start(self, event: Any) -> str:
        response = self.sfn.start_execution(stateMachineArn=self.state_machine_arn, input=json.dumps(event))
        return str(response["executionArn"])

    def wait(self, execution_arn: str) -> Outcome:
        description = wait_for_execution(self.sfn, execution_arn, EXECUTION_DEADLINE_SECONDS)
        events = history(self.sfn, execution_arn)
        return Outcome(
            arn=execution_arn,
            status=description["status"],
            output_json=description.get("output"),
            error=description.get("error"),
            states=entered_states(events),
            business_runs=lambda_invocations(events, self.business_function_arn),
        )

    def record(self, key: str) -> dict[str, Any] | None:
        item = self.dynamodb.get_item(TableName=self.table_name, Key={"id": {"S": key}}, ConsistentRead=True)
        record: dict[str, Any] | None = item.get("Item")
        return record

    def records(self) -> list[dict[str, Any]]:
        """This workflow's records (the table may be shared with other key prefixes)."""
        pages = self.dynamodb.get_paginator("scan").paginate(
            TableName=self.table_name,
            ConsistentRead=True,
            FilterExpression="begins_with(#id, :prefix)",
            ExpressionAttributeNames={"#id": "id"},
            ExpressionAttributeValues={":prefix": {"S": f"{self.settings.key_prefix}#"}},
        )
        return [plain(item) for page in pages for item in page["Items"]]
