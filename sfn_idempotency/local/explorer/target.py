"""What the explorer checks: a state machine on a running LocalCloud, the request its executions
carry, and the side effects that must happen at most once."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jmespath

from sfn_idempotency.wrap import IDEMPOTENCY_ERRORS, OTHER_STATES_ERRORS, RENAMED_STATES_ERRORS

if TYPE_CHECKING:
    from sfn_idempotency.local.engine.cloud import LocalCloud
    from sfn_idempotency.local.engine.service import IdempotentService
    from sfn_idempotency.local.explorer.outcome import ScheduleOutcome

# The errors a client may retry safely, as the flow names them (DESIGN.md, "Error names").
# Powertools' expiry attribute, the records table's TTL (IdempotencyTable's and LocalCloud.create_table's).
RECORDS_TTL_ATTRIBUTE = "expiration"
FLOW_ERRORS = frozenset({*IDEMPOTENCY_ERRORS, OTHER_STATES_ERRORS, *RENAMED_STATES_ERRORS.values()})
# An invariant of the user's own: raises AssertionError (its message is the violation) over a run.
Invariant = Callable[["ScheduleOutcome"], None]


class TargetError(ValueError):
    """A target the explorer cannot check as described (a clear message, never a traceback)."""


@dataclass(frozen=True)
class EventBridgeDelivery:
    """Requests reach the machine as events on the default bus, whose rule starts it: each request
    is an event's ``detail``. A duplicate is a redelivery, the same event again."""

    source: str
    detail_type: str

    def send(self, cloud: LocalCloud, request: Any) -> None:
        cloud.put_event(self.source, self.detail_type, request)

    def describe(self) -> str:
        return f"delivered by EventBridge ({self.source} {self.detail_type})"


@dataclass
class Target:
    """``state_machine_arn`` on ``cloud``: its executions all carry ``requests`` (one request, or
    several inputs that are the same request: equal under ``key`` when it is a JMESPath, or equal
    inputs). ``watch``: the functions whose runs are the side effects to happen at most once.
    ``tables``: the idempotency records' tables (default: every table in Powertools' schema, keyed
    by ``id`` alone with a TTL on ``expiration``).
    ``helpers``: the workflows that react to its executions (default: every other state machine
    on the cloud, such as the release workflow). ``safe_errors``: the errors a client may retry,
    beyond the flow's own and those the explorer injects. ``answer``: what of an output duplicates
    must agree on (default: all of it), or None for an output that answers an error a client may
    retry (an HTTP 409, say). ``via``: how requests reach the machine, when not by StartExecution
    (an EventBridgeDelivery: each request is then an event's detail). ``invariants``: your own, over each schedule's outcome.
    ``large_results``: the watched functions may be given results near Step Functions' 256 KiB
    quota (one that fits, one that does not), for a flow that must keep its promise at the limit."""

    cloud: LocalCloud
    state_machine_arn: str
    requests: Sequence[Any]
    watch: Sequence[str]
    key: str | None = None
    tables: Sequence[str] | None = None
    helpers: Sequence[str] | None = None
    safe_errors: frozenset[str] = frozenset()
    answer: Callable[[Any], Any] = field(default=lambda output: output)
    invariants: Sequence[Invariant] = ()
    via: EventBridgeDelivery | None = None
    large_results: bool = False

    def __post_init__(self) -> None:
        if not self.requests:
            raise TargetError("a target needs the input of at least one request")
        if not self.watch:
            raise TargetError("name the side effects to watch: the functions that must run at most once")
        self.requests = [json.loads(json.dumps(request)) for request in self.requests]
        identities = {json.dumps(self.identity(request), sort_keys=True) for request in self.requests}
        if len(identities) != 1:
            how = f"their key {self.key!r}" if self.key else "their input"
            raise TargetError(f"the requests are not one request: {how} differs")

    @classmethod
    def of_service(
        cls,
        service: IdempotentService,
        requests: Sequence[Any],
        *,
        state_machine_arn: str | None = None,
        key: str | None = None,
        **options: Any,
    ) -> Target:
        """An IdempotentService's workflow (or ``state_machine_arn``, a machine of its inline steps
        or HTTP front door, with its own ``key``), its business Lambda watched (results near the
        limit included), its table's records, its key's JMESPath."""
        return cls(
            service.cloud,
            state_machine_arn or service.state_machine_arn,
            requests,
            watch=[service.business_function],
            key=key or service.settings.event_key_jmespath,
            tables=[service.table_name],
            **{"large_results": True, **options},
        )

    def identity(self, request: Any) -> Any:
        """What makes two requests the same: the key's value, or the whole input."""
        if self.key is None:
            return request
        try:
            value = jmespath.search(self.key, request)
        except jmespath.exceptions.JMESPathError as error:
            raise TargetError(f"key {self.key!r} is not a JMESPath expression: {error}") from None
        if value is None:
            raise TargetError(f"key {self.key!r} selects nothing in {json.dumps(request)}")
        return value

    def record_tables(self) -> list[str]:
        if self.tables is not None:
            return list(self.tables)
        return [name for name in self.cloud.dynamodb.list_tables()["TableNames"] if self._holds_records(name)]

    def _holds_records(self, table: str) -> bool:
        """Powertools' schema: keyed by ``id`` alone, its items expiring by TTL on ``expiration``
        (a lock table or a user's own table keyed by ``id`` is not read as records)."""
        dynamodb = self.cloud.dynamodb
        keys = [k["AttributeName"] for k in dynamodb.describe_table(TableName=table)["Table"]["KeySchema"]]
        ttl = dynamodb.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
        return keys == ["id"] and ttl.get("AttributeName") == RECORDS_TTL_ATTRIBUTE

    def helper_machines(self) -> list[str]:
        if self.helpers is not None:
            return list(self.helpers)
        machines = self.cloud.sfn.list_state_machines()["stateMachines"]
        return [m["stateMachineArn"] for m in machines if m["stateMachineArn"] != self.state_machine_arn]

    def all_safe_errors(self, injected: frozenset[str]) -> frozenset[str]:
        return FLOW_ERRORS | injected | self.safe_errors
