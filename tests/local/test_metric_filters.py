"""Metric filters count (local/observability/metric_filters.py): PutLogEvents into a group with
metric filters puts their data points into CloudWatch, as on AWS."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sfn_idempotency.lambdas.compute_key.settings import load_settings
from sfn_idempotency.local import IdempotentService, LocalCloud
from sfn_idempotency.local.engine.cloud import EngineError
from sfn_idempotency.metrics import MAX_FILTER_NAME_LENGTH, OUTCOMES

GROUP = "/my/app"
STREAM = "s"


@pytest.fixture
def logs(local_cloud: LocalCloud) -> Any:
    client = local_cloud.client("logs")
    client.create_log_group(logGroupName=GROUP)
    client.create_log_stream(logGroupName=GROUP, logStreamName=STREAM)
    return client


def put(logs: Any, *messages: Any) -> None:
    now_ms = int(datetime.datetime.now(datetime.UTC).timestamp() * 1000)
    events = [{"timestamp": now_ms, "message": m if isinstance(m, str) else json.dumps(m)} for m in messages]
    logs.put_log_events(logGroupName=GROUP, logStreamName=STREAM, logEvents=events)


def datapoints(
    local_cloud: LocalCloud, metric: str, dimensions: list[dict[str, str]] | None = None
) -> list[float]:
    now = datetime.datetime.now(datetime.UTC)
    answer = local_cloud.client("cloudwatch").get_metric_statistics(
        Namespace="MyApp",
        MetricName=metric,
        Dimensions=dimensions or [],
        StartTime=now - datetime.timedelta(hours=1),
        EndTime=now + datetime.timedelta(hours=1),
        Period=7200,
        Statistics=["Sum", "SampleCount"],
    )
    return [point["Sum"] for point in answer["Datapoints"]]


def metric_filter(logs: Any, name: str, pattern: str, **transformation: Any) -> None:
    logs.put_metric_filter(
        logGroupName=GROUP,
        filterName=name,
        filterPattern=pattern,
        metricTransformations=[
            {"metricNamespace": "MyApp", "metricName": name, "metricValue": "1", **transformation}
        ],
    )


def test_each_matching_event_counts_once(local_cloud: LocalCloud, logs: Any):
    # Given a filter on errors; When three events arrive, two of them errors
    metric_filter(logs, "Errors", '{ $.level = "ERROR" }')
    put(logs, {"level": "ERROR"}, {"level": "INFO"}, {"level": "ERROR"}, "not json")
    # Then CloudWatch has two data points of 1
    assert sum(datapoints(local_cloud, "Errors")) == 2


def test_the_value_and_the_dimensions_come_from_the_event(local_cloud: LocalCloud, logs: Any):
    # Given a filter whose value is the latency and whose dimension is the route
    metric_filter(
        logs, "Latency", "{ $.latency > 0 }", metricValue="$.latency", dimensions={"Route": "$.route"}
    )
    # When events arrive, one without its route
    put(logs, {"latency": 120, "route": "/orders"}, {"latency": 80, "route": "/orders"}, {"latency": 5})
    # Then the sum per route is the latencies', and the event without a route publishes nothing
    assert sum(datapoints(local_cloud, "Latency", [{"Name": "Route", "Value": "/orders"}])) == 200
    # (moto's statistics asked without dimensions sum every series: the 5 ms event added nothing)
    assert sum(datapoints(local_cloud, "Latency")) == 200


def test_a_filter_put_again_replaces_the_old_one(local_cloud: LocalCloud, logs: Any):
    metric_filter(logs, "Hits", "hit")
    metric_filter(logs, "Hits", "hit")
    put(logs, "one hit")
    assert sum(datapoints(local_cloud, "Hits")) == 1
    assert len(logs.describe_metric_filters(logGroupName=GROUP)["metricFilters"]) == 1


def test_a_pattern_the_engine_cannot_evaluate_is_refused(logs: Any):
    with pytest.raises(ClientError) as refused:
        metric_filter(logs, "Regex", "{ $.message = %ERR.*% }")
    assert refused.value.response["Error"]["Code"] == "InvalidParameterException"
    assert logs.describe_metric_filters(logGroupName=GROUP)["metricFilters"] == []


def test_a_service_without_metrics_logs_nothing_and_says_it_counts_nothing(local_cloud: LocalCloud):
    service = IdempotentService(local_cloud, name="quiet", metrics=False)
    assert service.run({"orderId": "o-1", "amount": 1}).status == "SUCCEEDED"
    machine = local_cloud.sfn.describe_state_machine(stateMachineArn=service.state_machine_arn)
    assert machine.get("loggingConfiguration", {}).get("level", "OFF") == "OFF"
    with pytest.raises(EngineError, match="made with metrics=False"):
        service.outcome_counts()


def test_a_key_prefix_longer_than_a_filter_name_deploys_and_counts_its_outcomes(local_cloud: LocalCloud):
    # Given two 600-character key prefixes that differ only in their last character (CloudWatch
    # Logs takes a filter name of 512 characters at most; the record id still fits DynamoDB's key)
    prefixes = ["k" * 599 + "a", "k" * 599 + "b"]
    services = [
        IdempotentService(local_cloud, load_settings({"IDEMPOTENCY_KEY_PREFIX": prefix}), name=f"long-{i}")
        for i, prefix in enumerate(prefixes)
    ]
    # When each runs an order twice
    for service in services:
        for _ in range(2):
            assert service.run({"orderId": "o-long", "amount": 1}).status == "SUCCEEDED"

    # Then every metric filter was made, each name within the limit and its own, and each counts
    names = [f["filterName"] for f in local_cloud.client("logs").describe_metric_filters()["metricFilters"]]
    assert len(names) == len(set(names)) >= 2 * len(OUTCOMES)
    assert max(map(len, names)) <= MAX_FILTER_NAME_LENGTH
    for service in services:
        counts = service.outcome_counts()
        assert (counts["FirstRuns"], counts["Replays"]) == (1, 1)
