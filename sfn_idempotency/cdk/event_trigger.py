"""An EventBridge rule that starts a state machine, with retries and a dead-letter queue."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from sfn_idempotency.cdk.nag import acknowledge_dead_letter_queue_findings

# EventBridge retries a failed StartExecution with backoff for up to 24 hours, 185 times at most.
MAX_EVENT_AGE = Duration.hours(24)
RETRY_ATTEMPTS = 185
DEAD_LETTER_RETENTION = Duration.days(14)
_PATTERN_FIELDS = {
    "source": "source",
    "detail-type": "detail_type",
    "detail": "detail",
    "account": "account",
    "region": "region",
    "resources": "resources",
    "id": "id",
    "time": "time",
    "version": "version",
}


def event_pattern(document: Mapping[str, Any]) -> events.EventPattern:
    """A pattern as loaded from events/ (see sfn_idempotency.flow.patterns) as the CDK's EventPattern."""
    unknown = sorted(set(document) - _PATTERN_FIELDS.keys())
    if unknown:
        raise ValueError(f"unsupported event pattern fields {unknown}")
    return events.EventPattern(**{_PATTERN_FIELDS[field]: value for field, value in document.items()})


class EventTrigger(Construct):
    """Starts ``target`` with every event matching ``pattern`` (the whole event is the input)."""

    def __init__(
        self, scope: Construct, construct_id: str, *, pattern: Mapping[str, Any], target: sfn.IStateMachine
    ) -> None:
        super().__init__(scope, construct_id)
        self.dead_letter_queue = dead_letter_queue(self, "DeadLetterQueue")
        self.rule = events.Rule(
            self,
            "Rule",
            description=f"{construct_id}: starts its state machine with every matching event",
            event_pattern=event_pattern(pattern),
            targets=[
                targets.SfnStateMachine(
                    target,
                    dead_letter_queue=self.dead_letter_queue,
                    retry_attempts=RETRY_ATTEMPTS,
                    max_event_age=MAX_EVENT_AGE,
                )
            ],
        )


def dead_letter_queue(scope: Construct, construct_id: str) -> sqs.Queue:
    """An encrypted, TLS-only queue that keeps what could not be delivered for 14 days."""
    queue = sqs.Queue(
        scope,
        construct_id,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=DEAD_LETTER_RETENTION,
    )
    acknowledge_dead_letter_queue_findings(queue)
    return queue
