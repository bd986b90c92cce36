"""IdempotencyMetrics: the outcomes of a workflow's idempotent steps as CloudWatch metrics, with a
dashboard and alarms, from metric filters on the state machine's log group (sfn_idempotency.metrics
says why this way). The state machine must log at level ALL; execution data stays out."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration, Names
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from sfn_idempotency.metrics import OUTCOMES, IdempotentSteps, metric_filters

METRIC_PERIOD = Duration.minutes(5)
PERSISTENCE_ERRORS_THRESHOLD = 1  # per period: DynamoDB failing, or results after their lease
IN_PROGRESS_REFUSAL_PERCENT = 10  # of the step's arrivals (first runs, replays, refusals)
IN_PROGRESS_EVALUATION_PERIODS = 3  # consecutive periods, so a burst of retries does not page
DASHBOARD_WIDGET_WIDTH = 12  # of the dashboard's 24 columns


class IdempotencyMetrics(Construct):
    """``steps``: key prefix -> the prefix of its flow's state names ("" for the standalone flow,
    "<Step>." for an inline step). ``dashboard`` and ``alarms`` can be turned off; the metrics are
    ``self.metric(key_prefix, outcome)``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        log_group: logs.ILogGroup,
        workflow_name: str,
        steps: Mapping[str, str],
        key_log_group: logs.ILogGroup | None = None,
        dashboard: bool = True,
        alarms: bool = True,
        in_progress_refusal_percent: float = IN_PROGRESS_REFUSAL_PERCENT,
    ) -> None:
        """``key_log_group``: the key Lambda's, which logs each key with its execution: the
        dashboard then lists each outcome's key, to find the record to forget."""
        super().__init__(scope, construct_id)
        self.workflow = IdempotentSteps(workflow=workflow_name, steps=dict(steps))
        self._metrics: dict[tuple[str, str], cloudwatch.Metric] = {}
        self._build_metric_filters(log_group)
        self.alarms: list[cloudwatch.Alarm] = (
            self._build_alarms(in_progress_refusal_percent) if alarms else []
        )
        self.dashboard = self._build_dashboard(log_group, key_log_group) if dashboard else None

    @classmethod
    def of(
        cls,
        scope: Construct,
        *,
        log_group: logs.ILogGroup,
        steps: Mapping[str, str],
        key_function: lambda_.IFunction,
        dashboard: bool,
        alarms: bool,
    ) -> IdempotencyMetrics:
        """The metrics of ``scope``'s steps (a construct of this library), named after it."""
        return cls(
            scope,
            "Metrics",
            log_group=log_group,
            workflow_name=Names.unique_id(scope),
            steps=steps,
            key_log_group=log_group_of(key_function),
            dashboard=dashboard,
            alarms=alarms,
        )

    def metric(self, key_prefix: str, outcome: str) -> cloudwatch.Metric:
        return self._metrics[(key_prefix, outcome)]

    def _build_metric_filters(self, log_group: logs.ILogGroup) -> None:
        steps = list(self.workflow.steps)
        for spec in metric_filters(self.workflow):
            metric_filter = logs.MetricFilter(
                self,
                f"{spec.metric_name}Filter{steps.index(spec.key_prefix)}",
                log_group=log_group,
                filter_name=spec.filter_name,
                filter_pattern=logs.FilterPattern.literal(spec.pattern),
                metric_namespace=spec.namespace,
                metric_name=spec.metric_name,
                metric_value="1",
            )
            self._metrics[(spec.key_prefix, spec.metric_name)] = metric_filter.metric(
                statistic="Sum", period=METRIC_PERIOD, label=spec.metric_name
            )

    def _build_alarms(self, refusal_percent: float) -> list[cloudwatch.Alarm]:
        alarms = []
        for index, key_prefix in enumerate(self.workflow.steps):
            alarms.append(
                self.metric(key_prefix, "PersistenceErrors").create_alarm(
                    self,
                    f"PersistenceErrorsAlarm{index}",
                    alarm_description=f"{self.workflow.workflow} ({key_prefix}): DynamoDB failed for the "
                    "idempotency records, or a result came after its lease (IdempotencyPersistenceError)",
                    threshold=PERSISTENCE_ERRORS_THRESHOLD,
                    evaluation_periods=1,
                    comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                    treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                )
            )
            alarms.append(
                self._refusal_rate(key_prefix).create_alarm(
                    self,
                    f"InProgressRefusalsAlarm{index}",
                    alarm_description=f"{self.workflow.workflow} ({key_prefix}): more than {refusal_percent}% of "
                    "arrivals found their key in progress (IdempotencyAlreadyInProgressError) for "
                    f"{IN_PROGRESS_EVALUATION_PERIODS} periods: duplicates race, or claims outlive their runs",
                    threshold=refusal_percent,
                    evaluation_periods=IN_PROGRESS_EVALUATION_PERIODS,
                    comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                    treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                )
            )
        return alarms

    def _refusal_rate(self, key_prefix: str) -> cloudwatch.MathExpression:
        return cloudwatch.MathExpression(
            expression="IF(runs + replays + refusals > 0, 100 * refusals / (runs + replays + refusals), 0)",
            using_metrics={
                "runs": self.metric(key_prefix, "FirstRuns"),
                "replays": self.metric(key_prefix, "Replays"),
                "refusals": self.metric(key_prefix, "InProgressRefusals"),
            },
            label="In-progress refusals (% of arrivals)",
            period=METRIC_PERIOD,
        )

    def _build_dashboard(
        self, log_group: logs.ILogGroup, key_log_group: logs.ILogGroup | None
    ) -> cloudwatch.Dashboard:
        dashboard = cloudwatch.Dashboard(self, "Dashboard")
        for key_prefix in self.workflow.steps:
            dashboard.add_widgets(
                cloudwatch.GraphWidget(
                    title=f"{self.workflow.workflow} · {key_prefix}: outcomes",
                    left=[self.metric(key_prefix, outcome.metric_name) for outcome in OUTCOMES],
                    width=DASHBOARD_WIDGET_WIDTH,
                ),
                cloudwatch.GraphWidget(
                    title=f"{self.workflow.workflow} · {key_prefix}: in-progress refusals",
                    left=[self._refusal_rate(key_prefix)],
                    width=DASHBOARD_WIDGET_WIDTH,
                ),
            )
        for alarm in self.alarms:
            dashboard.add_widgets(cloudwatch.AlarmWidget(alarm=alarm, width=DASHBOARD_WIDGET_WIDTH))
        if key_log_group is not None:
            dashboard.add_widgets(
                cloudwatch.LogQueryWidget(
                    title=f"{self.workflow.workflow}: the idempotency key of each outcome",
                    log_group_names=[log_group.log_group_name, key_log_group.log_group_name],
                    query_lines=keys_by_outcome_query(self.workflow),
                    width=2 * DASHBOARD_WIDGET_WIDTH,
                )
            )
        return dashboard


def log_group_of(function: lambda_.IFunction) -> logs.ILogGroup | None:
    """A function's log group, when the construct knows it (one given as an IFunction may not)."""
    return function.log_group if isinstance(function, lambda_.Function) else None


def keys_by_outcome_query(workflow: IdempotentSteps) -> list[str]:
    """CloudWatch Logs Insights over the state machine's log group and the key Lambda's: both
    records carry ``execution_arn``; the key Lambda's also ``idempotency_key`` (never the event)."""
    states = sorted(
        f'"{prefix}{state}"' for prefix in workflow.steps.values() for o in OUTCOMES for state in o.states
    )
    return [
        "fields execution_arn, idempotency_key, details.name",
        f"filter ispresent(idempotency_key) or details.name in [{', '.join(states)}]",
        "stats latest(idempotency_key) as key, latest(details.name) as outcome by execution_arn",
        "filter ispresent(outcome)",
        "sort outcome",
    ]
