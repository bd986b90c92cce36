"""IdempotentHttpApi: ``POST /orders`` honouring the Idempotency-Key header, with no Lambda in front.

An API Gateway REST API integrates directly with StartSyncExecution of an Express workflow
(``statemachines/http_orders.asl.json``, its business Task wrapped inline); the request and response
mapping templates are the files in ``apis/`` that the local engine renders too.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from sfn_idempotency.cdk.inline_workflow import InlineWorkflow
from sfn_idempotency.cdk.nag import acknowledge_http_api_findings
from sfn_idempotency.cdk.state_machines import LOG_RETENTION
from sfn_idempotency.flow.http_api import DEFAULT_ERROR_STATUS, DEFAULT_SUCCESS_STATUS, ROUTE, http_workflow
from sfn_idempotency.flow.inline_workflows import BUSINESS_FUNCTION_PLACEHOLDER
from sfn_idempotency.flow.resources import ORDERS_REQUEST_TEMPLATE, ORDERS_RESPONSE_TEMPLATE
from sfn_idempotency.lambdas.compute_key.errors import ConfigurationError
from sfn_idempotency.lambdas.compute_key.settings import load_settings, settings_environment

STAGE_NAME = "api"
DEFAULT_TIMEOUT = Duration.seconds(20)
DEFAULT_EXPIRES_AFTER = Duration.hours(24)  # a client's retries of one request come within a day
DEFAULT_RATE_LIMIT_PER_SECOND = 100
DEFAULT_BURST_LIMIT = 200
JSON = "application/json"


class IdempotentHttpApi(Construct):
    """``POST /orders``: the body goes to ``business_function`` once per Idempotency-Key (per
    ``key_prefix``); the answers are those of the IETF draft (201, a replay marked
    ``Idempotent-Replayed``, 400, 409 with Retry-After, 422, the business errors' own statuses from
    ``error_statuses`` else 502, 503). Calls are signed (IAM authorization) and throttled."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        business_function: lambda_.IFunction,
        table: dynamodb.ITable,
        key_prefix: str = "http-orders",
        expires_after: Duration = DEFAULT_EXPIRES_AFTER,
        timeout: Duration = DEFAULT_TIMEOUT,
        success_status: int = DEFAULT_SUCCESS_STATUS,
        error_statuses: Mapping[str, int] | None = None,
        default_error_status: int = DEFAULT_ERROR_STATUS,
        rate_limit_per_second: int = DEFAULT_RATE_LIMIT_PER_SECOND,
        burst_limit: int = DEFAULT_BURST_LIMIT,
    ) -> None:
        super().__init__(scope, construct_id)
        try:
            settings = load_settings(
                settings_environment(
                    key_prefix=key_prefix,
                    expires_after_seconds=int(expires_after.to_seconds()),
                    timeout_seconds=int(timeout.to_seconds()),
                )
            )
            definition, self.retry_after_seconds = http_workflow(
                settings,
                success_status=success_status,
                error_statuses=error_statuses,
                default_error_status=default_error_status,
            )
        except ConfigurationError as error:
            raise ConfigurationError(f"{self.node.path}: {error}") from None
        self.workflow = InlineWorkflow(
            self,
            "Workflow",
            definition=definition,
            table=table,
            substitutions={BUSINESS_FUNCTION_PLACEHOLDER: business_function.function_arn},
            policy_statements=[
                iam.PolicyStatement(
                    actions=["lambda:InvokeFunction"], resources=[business_function.function_arn]
                )
            ],
            workflow_type=sfn.StateMachineType.EXPRESS,
        )
        self.api = self._build_api(rate_limit_per_second, burst_limit)
        self._build_route(self.workflow.state_machine)

    def _build_api(self, rate_limit_per_second: int, burst_limit: int) -> apigateway.RestApi:
        access_logs = logs.LogGroup(self, "AccessLogs", retention=LOG_RETENTION)
        api = apigateway.RestApi(
            self,
            "Api",
            description="POST /orders once per Idempotency-Key (StartSyncExecution, no Lambda in front)",
            cloud_watch_role=True,
            deploy_options=apigateway.StageOptions(
                stage_name=STAGE_NAME,
                access_log_destination=apigateway.LogGroupLogDestination(access_logs),
                access_log_format=apigateway.AccessLogFormat.json_with_standard_fields(
                    caller=True,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=True,
                ),
                logging_level=apigateway.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,  # request bodies may hold personal data
                tracing_enabled=True,
                throttling_rate_limit=rate_limit_per_second,
                throttling_burst_limit=burst_limit,
                variables={
                    # Read by the templates: the machine to start, and the Retry-After of a failure.
                    "stateMachineArn": self.workflow.state_machine.state_machine_arn,
                    "retryAfterSeconds": str(self.retry_after_seconds),
                },
            ),
        )
        acknowledge_http_api_findings(api)
        return api

    def _build_route(self, state_machine: sfn.StateMachine) -> None:
        role = iam.Role(
            self, "StartSyncExecutionRole", assumed_by=iam.ServicePrincipal("apigateway.amazonaws.com")
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["states:StartSyncExecution"], resources=[state_machine.state_machine_arn]
            )
        )
        integration = apigateway.AwsIntegration(
            service="states",
            subdomain="sync-states",
            action="StartSyncExecution",
            integration_http_method="POST",
            options=apigateway.IntegrationOptions(
                credentials_role=role,
                passthrough_behavior=apigateway.PassthroughBehavior.NEVER,
                request_templates={JSON: ORDERS_REQUEST_TEMPLATE.read_text(encoding="utf-8")},
                integration_responses=[
                    apigateway.IntegrationResponse(
                        status_code="200",
                        response_templates={JSON: ORDERS_RESPONSE_TEMPLATE.read_text(encoding="utf-8")},
                    )
                ],
            ),
        )
        self.api.root.add_resource(ROUTE).add_method(
            "POST",
            integration,
            authorization_type=apigateway.AuthorizationType.IAM,
            method_responses=[apigateway.MethodResponse(status_code="200")],
        )

    @property
    def url(self) -> str:
        return f"{self.api.url}{ROUTE}"
