"""The idempotency protocol under interleavings: a hypothesis state machine drives the engine.

Rules start executions and duplicates over a few keys, make business steps fail or hang, inject
DynamoDB faults at Claim, Read, Complete or Release, move the clock past leases and expiries, abort
executions (the release workflow runs), and let hung steps finish late. After every step the
invariants hold; ``make test`` draws a fixed few examples, ``make fuzz`` many random ones.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from sfn_idempotency.local import IdempotentService, LocalCloud
from sfn_idempotency.records import owner_execution, plain
from sfn_idempotency.settings import example_settings
from tests.properties import examples

KEYS = ("k0", "k1")
STEP_DEADLINE_SECONDS = 20.0
NAMED_ERRORS = frozenset(
    {
        "IdempotencyAlreadyInProgressError",
        "IdempotencyValidationError",
        "IdempotencyKeyError",
        "IdempotencyInconsistentStateError",
        "IdempotencyPersistenceError",
        "BusinessStepTimeoutError",
        "BusinessStepFailedError",
        "BusinessFailure",  # the business step's own error, re-thrown after its claim was released
    }
)
# Where a fault can be injected: the flow's DynamoDB state and the operation it calls.
FAULT_POINTS = {"Claim": "PutItem", "Read": "GetItem", "Complete": "UpdateItem", "Release": "DeleteItem"}
FAULTS = {
    "throttle": ("ProvisionedThroughputExceededException", 400, False),
    "5xx": ("InternalServerError", 500, False),
    "5xx after the write landed": ("InternalServerError", 500, True),
}
PERSISTENT_FAILURE_CALLS = 5  # more than any Retry's attempts: the operation fails for good


class BusinessFailure(Exception):
    pass


@dataclass
class Run:
    """One business step run: which key, when its claim's lease ends, whether it is still going."""

    key: str
    lease_ends_ms: int
    finished: bool = False


@dataclass
class Ticket:
    """What the test decided for one execution's business step."""

    key: str
    behaviour: str  # "succeed", "fail" or "hang"
    release: threading.Event = field(default_factory=threading.Event)
    entered: threading.Event = field(default_factory=threading.Event)


class Protocol(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.cloud = LocalCloud(retry_wait_scale=0).start()
        self.tickets: dict[str, Ticket] = {}
        self.runs: list[Run] = []
        self.overlaps: list[str] = []
        self.numbers = itertools.count(1)
        self.lock = threading.Lock()
        self.service = IdempotentService(
            self.cloud,
            example_settings({}, IDEMPOTENCY_EVENT_KEY_JMESPATH="orderId"),
            business_handler=self.business_step,
        )
        self.release = self.service.deploy_claim_release()
        self.lease_ms = self.service.settings.lease * 1000
        self.executions: dict[str, Ticket] = {}
        self.aborted: set[str] = set()
        self.completed: dict[str, tuple[str, int]] = {}  # key: (stored result, its expiry, epoch s)
        self.results: defaultdict[str, list[Any]] = defaultdict(list)  # key: every result produced
        self.openings: Counter[str] = Counter()  # key: times a (new) business run became legitimate

    # -- the business step --------------------------------------------------------------------------
    def business_step(self, event: Any, context: Any) -> Any:
        ticket = self.tickets[event["ticket"]]
        now = self.cloud.clock.now_ms()
        with self.lock:
            holding = [
                r for r in self.runs if r.key == ticket.key and not r.finished and r.lease_ends_ms > now
            ]
            if holding:
                self.overlaps.append(f"{ticket.key}: a second run while another's lease holds")
            run = Run(ticket.key, now + self.lease_ms)
            self.runs.append(run)
        ticket.entered.set()
        try:
            if ticket.behaviour == "hang" and not ticket.release.wait(STEP_DEADLINE_SECONDS):
                raise TimeoutError("the test never let the hung step finish")
            if ticket.behaviour == "fail":
                with self.lock:
                    self.openings[ticket.key] += 1  # its Release frees the key
                raise BusinessFailure(f"order {ticket.key} declined")
            result = {"orderId": ticket.key, "run": next(self.numbers)}
            with self.lock:
                self.results[ticket.key].append(result)
            return result
        finally:
            run.finished = True

    # -- rules ------------------------------------------------------------------------------------------
    def _start(self, key: str, behaviour: str) -> str:
        name = f"t{len(self.tickets)}"
        ticket = self.tickets[name] = Ticket(key, behaviour)
        if not any(t.key == key for t in self.executions.values()):
            self.openings[key] += 1  # the first execution of a key may run it
        arn = self.service.start({"orderId": key, "ticket": name})
        self.executions[arn] = ticket
        # Sequential steps: wait until it has ended, or hangs in its business step
        self.cloud.wait_until(
            lambda: (ticket.entered.is_set() and behaviour == "hang") or self._ended(arn),
            STEP_DEADLINE_SECONDS,
            f"{arn} to end or hang",
        )
        return arn

    def _ended(self, arn: str) -> bool:
        return bool(self.cloud.sfn.describe_execution(executionArn=arn)["status"] != "RUNNING")

    @rule(key=st.sampled_from(KEYS), behaviour=st.sampled_from(["succeed", "fail", "hang"]))
    def start(self, key: str, behaviour: str) -> None:
        self._start(key, behaviour)

    @precondition(lambda self: bool(self.executions))
    @rule(data=st.data())
    def start_duplicate(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted({t.key for t in self.executions.values()})))
        self._start(key, "succeed")

    @rule(
        key=st.sampled_from(KEYS),
        point=st.sampled_from(sorted(FAULT_POINTS)),
        fault=st.sampled_from(sorted(FAULTS)),
        persistent=st.booleans(),
        behaviour=st.sampled_from(["succeed", "fail"]),
    )
    def start_with_a_dynamodb_fault(
        self, key: str, point: str, fault: str, persistent: bool, behaviour: str
    ) -> None:
        operation = FAULT_POINTS[point]
        code, status, applied = FAULTS[fault]
        first = self.cloud.faults.calls_so_far("dynamodb", operation) + 1
        calls = range(first, first + (PERSISTENT_FAILURE_CALLS if persistent else 1))
        self.cloud.faults.api_error(
            "dynamodb", operation, code, calls=calls, status_code=status, applied=applied
        )
        try:
            self._start(key, behaviour)
        finally:
            self.cloud.faults.clear()
        if persistent and point == "Release":
            self.openings[key] += 1  # a failed Release may leave the claim to its lease (counted there)

    @rule(past=st.sampled_from(["lease", "expiry"]))
    def move_the_clock(self, past: str) -> None:
        seconds = (
            self.service.settings.lease if past == "lease" else self.service.settings.expires_after_seconds
        )
        for key in KEYS:
            record = self._record(key)
            if record is not None:
                self.openings[key] += 1  # a lease or a record may end: a new run may claim the key
        self.cloud.clock.advance(seconds + 1)

    @precondition(lambda self: any(self._hung()))
    @rule(data=st.data())
    def abort(self, data: st.DataObject) -> None:
        arn = data.draw(st.sampled_from(self._hung()))
        ticket = self.executions[arn]
        self.cloud.sfn.stop_execution(executionArn=arn)
        ticket.release.set()  # moto applies a stop when the running state ends (AWS: at once)
        assert self.cloud.wait(arn, STEP_DEADLINE_SECONDS).status == "ABORTED"
        self.aborted.add(arn)
        self.openings[ticket.key] += 1  # the release workflow frees the key
        releases = len(self.aborted)
        self.cloud.wait_until(
            lambda: len(self.cloud.executions(self.release)) >= releases, STEP_DEADLINE_SECONDS, "release"
        )
        for release in self.cloud.executions(self.release):
            self.cloud.wait(release, STEP_DEADLINE_SECONDS)

    @precondition(lambda self: any(self._hung()))
    @rule(data=st.data())
    def finish_late(self, data: st.DataObject) -> None:
        arn = data.draw(st.sampled_from(self._hung()))
        self.executions[arn].release.set()
        self.cloud.wait(arn, STEP_DEADLINE_SECONDS)

    def _hung(self) -> list[str]:
        """Executions whose business step hangs now (a duplicate may have replayed instead)."""
        return sorted(
            arn
            for arn, ticket in self.executions.items()
            if ticket.behaviour == "hang" and ticket.entered.is_set() and not ticket.release.is_set()
        )

    # -- invariants -------------------------------------------------------------------------------------
    def _record(self, key: str) -> dict[str, Any] | None:
        item = self.service.record_for({"orderId": key})
        return None if item is None else plain(item)

    @invariant()
    def at_most_one_run_in_flight_while_a_lease_holds(self) -> None:
        assert self.overlaps == []

    @invariant()
    def a_completed_result_is_replaced_only_after_it_expired(self) -> None:
        now_s = self.cloud.clock.now_ms() // 1000
        for key in KEYS:
            record = self._record(key)
            before = self.completed.get(key)
            if before is not None and before[1] > now_s:
                assert record is not None, f"{key}: a COMPLETED record vanished before it expired"
                assert record.get("data") == before[0], f"{key}: a COMPLETED result was replaced"
            if record is not None and record["status"] == "COMPLETED":
                self.completed[key] = (record["data"], int(record["expiration"]))

    @invariant()
    def every_finished_execution_ends_in_a_result_or_a_named_error(self) -> None:
        for arn, ticket in self.executions.items():
            description = self.cloud.sfn.describe_execution(executionArn=arn)
            status = description["status"]
            if status == "SUCCEEDED":
                output = json.loads(description["output"])
                assert output in self.results[ticket.key], f"{arn}: an output nobody produced"
            elif status == "FAILED":
                assert description.get("error") in NAMED_ERRORS, f"{arn}: {description.get('error')}"
            else:
                assert status in ("RUNNING", "ABORTED"), f"{arn}: {status}"

    @invariant()
    def no_claim_of_an_aborted_execution_survives_its_release(self) -> None:
        for key in KEYS:
            record = self._record(key)
            if record is not None and record["status"] == "INPROGRESS" and "owner" in record:
                assert owner_execution(record["owner"]) not in self.aborted, (
                    f"{key}: an aborted claim is held"
                )

    @invariant()
    def every_business_run_had_an_opening(self) -> None:
        runs = Counter(run.key for run in self.runs)
        for key, count in runs.items():
            assert count <= self.openings[key], f"{key}: {count} runs, {self.openings[key]} openings"

    def teardown(self) -> None:
        for ticket in self.tickets.values():
            ticket.release.set()
        try:
            self.cloud.wait_all(self.executions, STEP_DEADLINE_SECONDS)
        finally:
            self.cloud.close()


TestTheProtocolUnderInterleavings = pytest.mark.slow(pytest.mark.property(Protocol.TestCase))
TestTheProtocolUnderInterleavings.settings = settings(
    max_examples=examples(6),
    stateful_step_count=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
