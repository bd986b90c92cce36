"""The idempotency metrics of a workflow on the engine: the metric filters sfn_idempotency.metrics
defines, put on the workflow's log group (as the CDK constructs deploy them), and their counts read
back from CloudWatch."""

from __future__ import annotations

import datetime
from typing import Any

from sfn_idempotency.metrics import OUTCOME_NAMES, IdempotentSteps, metric_filters, namespace

# The counts are read as one period around now: wider than any clock a test moves.
COUNT_WINDOW = datetime.timedelta(days=30)


def put_metric_filters(logs: Any, log_group: str, workflow: IdempotentSteps) -> None:
    for spec in metric_filters(workflow):
        logs.put_metric_filter(
            logGroupName=log_group,
            filterName=spec.filter_name,
            filterPattern=spec.pattern,
            metricTransformations=[
                {"metricName": spec.metric_name, "metricNamespace": spec.namespace, "metricValue": "1"}
            ],
        )


def outcome_counts(cloudwatch: Any, workflow: str, key_prefix: str) -> dict[str, int]:
    """Every outcome's count so far (0 for one that never happened)."""
    now = datetime.datetime.now(datetime.UTC)
    counts = {}
    for name in OUTCOME_NAMES:
        answer = cloudwatch.get_metric_statistics(
            Namespace=namespace(workflow, key_prefix),
            MetricName=name,
            StartTime=now - COUNT_WINDOW,
            EndTime=now + COUNT_WINDOW,
            Period=int(2 * COUNT_WINDOW.total_seconds()),
            Statistics=["Sum"],
        )
        counts[name] = int(sum(point["Sum"] for point in answer["Datapoints"]))
    return counts
