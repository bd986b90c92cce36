"""Metric filters that count: an event written to a log group that has metric filters becomes a
data point in CloudWatch for each filter whose pattern it matches, as on AWS. moto keeps the
filters (PutMetricFilter, DescribeMetricFilters) but never applies them; this capability applies
them to every PutLogEvents, a state machine's own logs included, into moto's CloudWatch.

The metric's value is the transformation's ``metricValue``: a number, or a ``$.selector`` of a JSON
event (an event where it is absent or not a number adds nothing). Dimensions are selectors too; a
filter whose dimension is absent from the event publishes nothing for it, as documented
("This dimension will only be published for a metric if the value is found in the log event").
A pattern the engine cannot evaluate is refused when the filter is put (InvalidParameterException),
not silently ignored.
"""

from __future__ import annotations

import datetime
import functools
import logging
from typing import Any

from sfn_idempotency.local.compat.patching import CAPABILITY, Patch, apply_capability
from sfn_idempotency.local.observability.filter_patterns import (
    ABSENT,
    Matcher,
    PatternError,
    compile_pattern,
    value_at,
)

LOG = logging.getLogger(__name__)
_STREAM = "moto.logs.models:LogStream"
_BACKEND = "moto.logs.models:LogsBackend"
_FILTERS = "moto.logs.metric_filters:MetricFilters"


@functools.lru_cache(maxsize=256)
def _matcher(pattern: str) -> Matcher:
    return compile_pattern(pattern)


def _refused_patterns(original: Any) -> Any:
    def put_metric_filter(
        self: Any, filter_name: str, filter_pattern: str, *args: Any, **kwargs: Any
    ) -> None:
        from moto.logs.exceptions import InvalidParameterException

        try:
            _matcher(filter_pattern)
        except PatternError as error:
            raise InvalidParameterException(f"Invalid metric filter pattern: {error}") from None
        # AWS replaces a filter of the same name in the group; moto would keep both.
        log_group = kwargs.get("log_group_name", args[0] if args else None)
        self.filters.delete_filter(filter_name, log_group)
        original(self, filter_name, filter_pattern, *args, **kwargs)

    return put_metric_filter


def _counted(original: Any) -> Any:
    def put_log_events(self: Any, log_events: list[dict[str, Any]]) -> str:
        token = original(self, log_events)
        _publish(self.account_id, self.region, self.log_group.name, log_events)
        return str(token)

    return put_log_events


# A group's filters, compiled, until a filter is added or deleted anywhere (a state machine's log
# group takes an event per history event: the filters are not looked up and compiled each time).
_compiled: dict[tuple[str, str, str], list[tuple[Matcher, list[dict[str, Any]]]]] = {}


def _filters_changed(original: Any) -> Any:
    def changed(self: Any, *args: Any, **kwargs: Any) -> Any:
        _compiled.clear()
        return original(self, *args, **kwargs)

    return changed


def _group_filters(account: str, region: str, group: str) -> list[tuple[Matcher, list[dict[str, Any]]]]:
    from moto.logs.models import logs_backends

    key = (account, region, group)
    found = _compiled.get(key)
    if found is None:
        filters = logs_backends[account][region].filters.get_matching_filters(log_group_name=group)
        found = _compiled[key] = [(_matcher(f["filterPattern"]), f["metricTransformations"]) for f in filters]
    return found


def _publish(account: str, region: str, group: str, log_events: list[dict[str, Any]]) -> None:
    from moto.cloudwatch.models import cloudwatch_backends

    filters = _group_filters(account, region, group)
    if not filters:
        return
    cloudwatch = cloudwatch_backends[account][region]
    for event in log_events:
        message = str(event["message"])
        for matches, transformations in filters:
            if not matches(message):
                continue
            for transformation in transformations:
                datum = _datum(transformation, message, int(event["timestamp"]))
                if datum is not None:
                    cloudwatch.put_metric_data(transformation["metricNamespace"], [datum])


def _datum(transformation: dict[str, Any], message: str, timestamp_ms: int) -> dict[str, Any] | None:
    value = _value_of(str(transformation["metricValue"]), message)
    if value is None:
        return None
    datum: dict[str, Any] = {
        "MetricName": transformation["metricName"],
        "Value": value,
        # moto keeps naive UTC times (its utcnow), and compares them with the times asked for.
        "Timestamp": datetime.datetime.fromtimestamp(timestamp_ms / 1000, tz=datetime.UTC).replace(
            tzinfo=None
        ),
    }
    if transformation.get("unit"):
        datum["Unit"] = transformation["unit"]
    dimensions = []
    for name, selector in (transformation.get("dimensions") or {}).items():
        found = _value_of(str(selector), message, numeric=False)
        if found is None:
            return None
        dimensions.append({"Name": name, "Value": str(found)})
    if dimensions:
        datum["Dimensions"] = dimensions
    return datum


def _value_of(expression: str, message: str, *, numeric: bool = True) -> Any:
    """A transformation's value or dimension: a literal, or a selector of the JSON event (None:
    absent, or not a number where one is needed)."""
    if not expression.startswith("$"):
        return float(expression) if numeric else expression
    value = value_at(expression, message)
    if value is ABSENT or (numeric and (isinstance(value, bool) or not isinstance(value, int | float))):
        return None
    return value


PATCHES: tuple[Patch, ...] = (
    Patch(CAPABILITY, _STREAM, "put_log_events", _counted),
    Patch(CAPABILITY, _BACKEND, "put_metric_filter", _refused_patterns),
    Patch(CAPABILITY, _FILTERS, "add_filter", _filters_changed),
    Patch(CAPABILITY, _FILTERS, "delete_filter", _filters_changed),
)


def install() -> None:
    apply_capability("metric filters", PATCHES)
