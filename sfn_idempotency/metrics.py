"""Metrics per outcome, from the state machine's own logs: what CDK deploys and what the local engine
evaluates are these same metric filters.

Why metric filters: every outcome of the flow ends in a state of its own (Replay, AlreadyInProgress,
Release, LeaseTakenOver...), and the state machine logs each state it enters, with its name, at
level ALL, even without execution data. A metric filter on those records counts outcomes without a
state transition, a request or a Lambda of ours, and without any business data (docs/guides/
know-what-happened.md compares the other ways). One namespace per workflow and key prefix,
``SfnIdempotency/<workflow>/<key prefix>``: a metric filter's dimensions can only come from fields
of the log record, and the record has neither.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass

NAMESPACE_ROOT = "SfnIdempotency"
_NAMESPACE_UNSAFE = re.compile(r"[^A-Za-z0-9._\-/#:]")  # CloudWatch's namespace characters
MAX_NAMESPACE_LENGTH = 255
MAX_FILTER_NAME_LENGTH = 512  # CloudWatch Logs: PutMetricFilter's filterName
_NAME_DIGEST_LENGTH = 16


@dataclass(frozen=True)
class Outcome:
    """One outcome: its metric, and the history event of the flow's states that marks it."""

    metric_name: str
    event_type: str
    states: tuple[str, ...]
    meaning: str


OUTCOMES = (
    Outcome(
        "FirstRuns", "TaskStateEntered", ("Complete",), "the business step ran and its result is recorded"
    ),
    Outcome(
        "Replays", "PassStateEntered", ("Replay", "ReplayUntrackedRecord"), "a duplicate replayed the result"
    ),
    Outcome(
        "InProgressRefusals",
        "FailStateEntered",
        ("AlreadyInProgress", "AlreadyInProgressUntracked"),
        "a duplicate found the key in progress and failed (safe to retry)",
    ),
    Outcome(
        "ReleasedFailures",
        "TaskStateEntered",
        ("Release",),
        "the business step failed; its claim was released",
    ),
    Outcome("LeaseTakeovers", "PassStateEntered", ("LeaseTakenOver",), "an expired lease was taken over"),
    Outcome(
        "PersistenceErrors",
        "FailStateEntered",
        ("PersistenceFailed", "LeaseLost"),
        "DynamoDB failed, or a result came after its lease (IdempotencyPersistenceError)",
    ),
    Outcome(
        "ResultsTooLarge",
        "FailStateEntered",
        ("ResultTooLarge", "RecordedResultTooLarge", "RecordTooLargeToRead"),
        "a result too large to record or replay (IdempotencyResultTooLargeError)",
    ),
)
OUTCOME_NAMES = tuple(outcome.metric_name for outcome in OUTCOMES)


@dataclass(frozen=True)
class MetricFilterSpec:
    """One metric filter: a CloudWatch Logs filter pattern and the metric it counts into."""

    key_prefix: str
    filter_name: str
    pattern: str
    namespace: str
    metric_name: str


@dataclass(frozen=True)
class IdempotentSteps:
    """The idempotent steps of one workflow: key prefix -> the prefix of its flow's state names
    ("" for the standalone flow, "<Step>." for an inline step)."""

    workflow: str
    steps: Mapping[str, str]


def namespace(workflow: str, key_prefix: str) -> str:
    text = f"{NAMESPACE_ROOT}/{workflow}/{key_prefix}"
    return _NAMESPACE_UNSAFE.sub("_", text)[:MAX_NAMESPACE_LENGTH]


def filter_pattern(outcome: Outcome, state_prefix: str = "") -> str:
    """AWS's JSON filter syntax, on Step Functions' log record (``type``, ``details.name``)."""
    names = " || ".join(f'$.details.name = "{state_prefix}{state}"' for state in outcome.states)
    return f'{{ ($.type = "{outcome.event_type}") && ({names}) }}'


def filter_name(workflow: str, key_prefix: str, metric_name: str) -> str:
    """``<workflow>-<key prefix>-<metric>``, as CloudWatch Logs takes a filter's name (no ``:`` or
    ``*``, 512 characters at most): a longer one keeps its start and its metric, with a digest of
    the whole between them, so that two long key prefixes still name two filters."""
    name = re.sub(r"[:*]", "_", f"{workflow}-{key_prefix}-{metric_name}")
    if len(name) <= MAX_FILTER_NAME_LENGTH:
        return name
    suffix = f"-{hashlib.sha256(name.encode()).hexdigest()[:_NAME_DIGEST_LENGTH]}-{metric_name}"
    return name[: MAX_FILTER_NAME_LENGTH - len(suffix)] + suffix


def metric_filters(workflow: IdempotentSteps) -> list[MetricFilterSpec]:
    return [
        MetricFilterSpec(
            key_prefix=key_prefix,
            filter_name=filter_name(workflow.workflow, key_prefix, outcome.metric_name),
            pattern=filter_pattern(outcome, state_prefix),
            namespace=namespace(workflow.workflow, key_prefix),
            metric_name=outcome.metric_name,
        )
        for key_prefix, state_prefix in workflow.steps.items()
        for outcome in OUTCOMES
    ]
