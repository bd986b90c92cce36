"""cdk-nag AwsSolutions findings that were reviewed and accepted, each with its reason."""

from __future__ import annotations

import json

from aws_cdk import Acknowledgment, Stack, Validations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import IConstruct

_PACK = "AwsSolutions::AwsSolutions"

LAMBDA_FINDINGS = {
    f"{_PACK}-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]": (
        "AWSLambdaBasicExecutionRole only lets the function write its own CloudWatch logs."
    ),
    f"{_PACK}-IAM5[Resource::*]": (
        "X-Ray tracing: xray:PutTraceSegments and PutTelemetryRecords only accept Resource '*'."
    ),
    f"{_PACK}-L1": "Python 3.13 matches the Powertools public layer (python313) the function uses.",
}

STATE_MACHINE_FINDINGS = {
    f"{_PACK}-IAM5[Resource::*]": (
        "CloudWatch Logs delivery and X-Ray actions only accept Resource '*'; "
        "the DynamoDB and Lambda rights name their resources."
    ),
    f"{_PACK}-SF1": (
        "ERROR-level logging by default: ALL would log every state's input and output, and results "
        "may hold personal data; execution data can be switched on per workflow."
    ),
}


DEAD_LETTER_QUEUE_FINDINGS = {
    f"{_PACK}-SQS3": "This queue is itself the dead-letter queue of the EventBridge target.",
}


HTTP_API_FINDINGS = {
    f"{_PACK}-APIG2": (
        "The workflow validates the request itself (the Idempotency-Key header, answered 400 as "
        "problem+json naming it); a request validator would answer with API Gateway's own body."
    ),
    f"{_PACK}-APIG3": "WAF is the deployer's choice per account; the stage is throttled.",
    f"{_PACK}-COG4": "Calls are signed: the route uses IAM authorization, not a Cognito user pool.",
    f"{_PACK}-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]": (
        "The account's API Gateway logging role: AWS's managed policy only writes CloudWatch logs."
    ),
}


def _acknowledge(scope: IConstruct, findings: dict[str, str]) -> None:
    Validations.of(scope).acknowledge(
        *(Acknowledgment(id=rule, reason=reason) for rule, reason in findings.items())
    )


def acknowledge_lambda_findings(function: lambda_.Function) -> None:
    _acknowledge(function, LAMBDA_FINDINGS)


def acknowledge_state_machine_findings(state_machine: sfn.StateMachine) -> None:
    _acknowledge(state_machine, STATE_MACHINE_FINDINGS)


def acknowledge_http_api_findings(api: IConstruct) -> None:
    _acknowledge(api, HTTP_API_FINDINGS)


def acknowledge_dead_letter_queue_findings(queue: IConstruct) -> None:
    _acknowledge(queue, DEAD_LETTER_QUEUE_FINDINGS)


def acknowledge_execution_wildcard(state_machine: sfn.StateMachine, machine_name: str, reason: str) -> None:
    """A role that follows another machine's executions, whose names it cannot know in advance, is
    granted ``execution:<machine>:*``: that finding, with ``reason``."""
    rendered = json.dumps(Stack.of(state_machine).resolve(machine_name), separators=(",", ":"))
    resource = f"arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:{rendered}:*"
    _acknowledge(state_machine, {f"{_PACK}-IAM5[Resource::{resource}]": reason})
