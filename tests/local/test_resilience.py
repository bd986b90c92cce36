"""Exactly-once when everything goes wrong: duplicate storms, DynamoDB and business faults,
executions no Catch sees, hostile input."""

from __future__ import annotations

import collections
import hashlib
import json
import threading
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfn_idempotency.deployed.records import owner_execution
from sfn_idempotency.lambdas.place_order.orders import place_order
from sfn_idempotency.local import ExecutionResult, IdempotentService, LocalCloud
from tests.local.conftest import Gate, ServiceFactory, TwoGates
from tests.properties import examples
from tests.unit.powertools_reference import powertools_key

STORM_CONCURRENCY = 32  # 256 executions: a storm; `make bench` runs them by the thousand
STORM_KEYS = 8
STORM_DEADLINE_SECONDS = 600
THROTTLED = "ProvisionedThroughputExceededException"
MAX_TRANSIENT_RETRIES = 4  # the ASL's Retry MaxAttempts on DynamoDB states
IN_PROGRESS = "IdempotencyAlreadyInProgressError"


def outcome(result: ExecutionResult) -> str:
    return result.states[-1] if result.status == "SUCCEEDED" else str(result.error)


# -- duplicate storms -------------------------------------------------------------------------------
@pytest.mark.slow
def test_duplicate_storm_runs_the_business_step_once_per_key(make_service: ServiceFactory):
    # Given a business step that holds each order until the test lets go, so the storm must overlap
    release = threading.Event()

    def held(event: Any, context: Any) -> Any:
        if not release.wait(STORM_DEADLINE_SECONDS):
            raise TimeoutError("the test never released the business step")
        return place_order(event)

    service = make_service(held)
    cloud = service.cloud
    # And 64 concurrent executions for each of 8 orders, started from 8 threads at once
    orders = [{"orderId": f"storm-{k}", "amount": k + 1} for k in range(STORM_KEYS)]
    arns: list[str] = []
    lock = threading.Lock()

    def start_all(order: dict[str, Any]) -> None:
        started = [service.start(order) for _ in range(STORM_CONCURRENCY)]
        with lock:
            arns.extend(started)

    try:
        starters = [threading.Thread(target=start_all, args=(order,)) for order in orders]
        for starter in starters:
            starter.start()
        for starter in starters:
            starter.join(STORM_DEADLINE_SECONDS)

        # When every execution but the 8 claim holders has ended, and then the holders are let go
        def only_holders_run() -> bool:
            running = cloud.sfn.list_executions(
                stateMachineArn=service.state_machine_arn, statusFilter="RUNNING"
            )
            return service.business_runs == STORM_KEYS and len(running["executions"]) == STORM_KEYS

        cloud.wait_until(only_holders_run, STORM_DEADLINE_SECONDS, "all but the claim holders to end")
    finally:
        release.set()
    results = cloud.wait_all(arns, timeout=STORM_DEADLINE_SECONDS)

    # Then the business step ran exactly once per order, and every other execution overlapped a holder
    assert len(results) == STORM_CONCURRENCY * STORM_KEYS
    assert service.business_runs == STORM_KEYS
    outcomes = collections.Counter(outcome(r) for r in results)
    assert outcomes == {"Complete": STORM_KEYS, IN_PROGRESS: STORM_KEYS * (STORM_CONCURRENCY - 1)}
    first_outputs = {r.output["orderId"]: r.output_json for r in results if outcome(r) == "Complete"}
    # And every key ends COMPLETED with the first run's result
    records = {r["id"]: r for r in service.records()}
    assert len(records) == STORM_KEYS
    for order in orders:
        record = records[service.key_for(order)]
        assert record["status"] == "COMPLETED"
        assert json.loads(record["data"]) == json.loads(first_outputs[order["orderId"]])

    # And retrying the in-progress ones replays the first output for all
    for result in results:
        if outcome(result) == IN_PROGRESS:
            order = json.loads(result.history[0]["executionStartedEventDetails"]["input"])
            retried = service.run(order)
            assert outcome(retried) == "Replay"
            assert retried.output_json == first_outputs[order["orderId"]]
    assert service.business_runs == STORM_KEYS


# -- DynamoDB faults ---------------------------------------------------------------------------------
FIRST = {"orderId": "o-fault", "amount": 9}
FAILING = {"orderId": "o-fault-bad", "amount": -9}


@pytest.mark.parametrize("operation", ["PutItem", "GetItem", "UpdateItem", "DeleteItem"])
@pytest.mark.parametrize("attempts", [1, MAX_TRANSIENT_RETRIES])
def test_transient_errors_in_every_dynamodb_state_are_retried(
    idempotent_service: IdempotentService, local_cloud: LocalCloud, operation: str, attempts: int
):
    # Given the first `attempts` calls of one operation throttled
    local_cloud.faults.api_error("dynamodb", operation, THROTTLED, calls=range(1, attempts + 1))

    # When a first run, a duplicate and a failing order go through every DynamoDB state
    first, duplicate, failing = (idempotent_service.run(e) for e in (FIRST, FIRST, FAILING))

    # Then each throttled call was one failed attempt of the state that made it, retried
    made_by = {"PutItem": first, "GetItem": duplicate, "UpdateItem": first, "DeleteItem": failing}[operation]
    failures = [e["taskFailedEventDetails"]["error"] for e in made_by.history if e["type"] == "TaskFailed"]
    assert failures.count(f"DynamoDB.{THROTTLED}") == attempts
    # And exactly-once holds, and the failing order's claim was released
    assert first.status == "SUCCEEDED"
    assert duplicate.output_json == first.output_json
    assert failing.error == "InvalidOrderError"
    assert idempotent_service.business_runs == 2
    assert idempotent_service.record_for(FAILING) is None
    assert idempotent_service.record_for(FIRST)["status"]["S"] == "COMPLETED"


@pytest.mark.parametrize("error_code", ["ServiceException", "TooManyRequestsException"])
def test_transient_lambda_service_errors_are_retried(
    idempotent_service: IdempotentService, local_cloud: LocalCloud, error_code: str
):
    # Given the Lambda service failing the first call to the key Lambda and the first to the business step
    local_cloud.faults.api_error("lambda", "Invoke", error_code, calls=[1, 3], status_code=500)

    # When an order whose key only the key Lambda computes runs (a character outside the provable
    # key's domain: the standalone flow's Claim sends it to ComputeKey)
    result = idempotent_service.run({**FIRST, "orderId": f"{FIRST['orderId']}-ü"})

    # Then both Tasks retried on Lambda.<error> and the order was placed once
    failures = [e["taskFailedEventDetails"]["error"] for e in result.history if e["type"] == "TaskFailed"]
    assert failures == [f"Lambda.{error_code}"] * 2
    assert outcome(result) == "Complete"
    assert idempotent_service.business_runs == 1


# (operation, scenario event, expected error, record status right after, outcome once the lease ended)
PERMANENT = [
    ("PutItem", FIRST, "IdempotencyPersistenceError", None, "Complete"),
    ("GetItem", FIRST, "IdempotencyPersistenceError", "COMPLETED", "Replay"),
    ("UpdateItem", FIRST, "IdempotencyPersistenceError", "INPROGRESS", "Complete"),
    ("DeleteItem", FAILING, "InvalidOrderError", "INPROGRESS", "InvalidOrderError"),
]
FAILING_STATE = {"PutItem": "Claim", "GetItem": "Read", "UpdateItem": "Complete", "DeleteItem": "Release"}


@pytest.mark.parametrize(("operation", "event", "error", "status", "later"), PERMANENT)
def test_permanent_dynamodb_errors_end_named_and_lock_no_key_past_its_lease(
    idempotent_service: IdempotentService, local_cloud: LocalCloud, operation, event, error, status, later
):
    # Given a completed record for the GetItem case (only duplicates read)
    if operation == "GetItem":
        idempotent_service.run(event)
    # And one operation failing for good
    local_cloud.faults.api_error("dynamodb", operation, "InternalServerError", status_code=500)

    # When the event runs
    result = idempotent_service.run(event)

    # Then it ends with the named error, never States.Runtime, after the whole retry budget
    assert result.status == "FAILED"
    assert result.error == error
    failures = [e["taskFailedEventDetails"]["error"] for e in result.history if e["type"] == "TaskFailed"]
    assert failures.count("DynamoDB.InternalServerErrorException") == 1 + MAX_TRANSIENT_RETRIES
    assert FAILING_STATE[operation] in result.states
    record = idempotent_service.record_for(event)
    assert (record["status"]["S"] if record else None) == status

    # And once the fault is gone and the lease has ended, nothing blocks the key
    local_cloud.faults.clear()
    local_cloud.clock.advance(idempotent_service.settings.lease + 1)
    after = idempotent_service.run(event)
    assert outcome(after) == later


# -- business step faults ----------------------------------------------------------------------------
@pytest.mark.slow
def test_business_step_returning_after_its_timeout_is_released_and_runs_again_at_most_once(
    make_service: ServiceFactory, gate: Gate
):
    # Given a 1 s timeout and a business step whose first call returns only when the test says so
    service = make_service(gate.handler, IDEMPOTENCY_TIMEOUT_SECONDS="1")

    # When the order runs and times out, the late call returns, and the order is retried twice
    timed_out = service.run(FIRST)
    assert gate.entered.is_set()
    gate.open()
    retried = service.run(FIRST)
    duplicate = service.run(FIRST)

    # Then the claim was released at the timeout, the retry ran once more, and then it replays
    assert timed_out.error == "BusinessStepTimeoutError"
    assert outcome(retried) == "Complete"
    assert outcome(duplicate) == "Replay"
    assert service.business_runs == 2


# -- executions no Catch sees --------------------------------------------------------------------------
def released_by(service: IdempotentService, release: str) -> ExecutionResult:
    """The one run of the release workflow, started by the engine's own status change event."""
    cloud = service.cloud
    cloud.wait_until(lambda: len(cloud.executions(release)) == 1, what="the release workflow to start")
    return cloud.wait(cloud.executions(release)[0])


@pytest.mark.parametrize(
    ("event", "overrides", "release_path"),
    [
        (FIRST, {}, ["KeyedRelease", "Released"]),
        (
            {"orderId": "o-fault-é", "amount": 9},
            {},
            ["KeyedRelease", "ComputeKey", "HasKey", "ReleaseClaim", "Released"],
        ),
        (
            FIRST,
            {"IDEMPOTENCY_HASH_FUNCTION": "blake2b"},
            ["ComputeKey", "HasKey", "ReleaseClaim", "Released"],
        ),
    ],
    ids=["provable-key", "key-not-provable-for-this-event", "settings-never-provable"],
)
def test_a_stopped_execution_has_its_claim_released_by_the_status_change_event(
    make_service: ServiceFactory, gate: Gate, event: Any, overrides: dict[str, str], release_path: list[str]
):
    # Given an execution stopped while its business step runs (no Catch sees StopExecution)
    service = make_service(gate.handler, **overrides)
    release = service.deploy_claim_release()
    stopped = service.start(event)
    assert gate.entered.wait(10)
    service.cloud.sfn.stop_execution(executionArn=stopped, error="Operator", cause="stopped by hand")
    # (moto applies the stop when the running state ends; AWS at once, the Lambda running on regardless)
    gate.open()
    assert service.cloud.wait(stopped).status == "ABORTED"

    # When Step Functions' status change event (ABORTED) starts the release workflow
    released = released_by(service, release)

    # Then it deleted that execution's claim, by the key it computed itself where the key is
    # provable, by the key Lambda's where not; and a retry runs at once
    assert released.states[-len(release_path) :] == release_path
    assert "ComputeKey" not in released.states[: -len(release_path)]
    assert service.record_for(event) is None
    assert outcome(service.run(event)) == "Complete"


@pytest.mark.parametrize("situation", ["claim of another execution", "persistence error", "no key"])
def test_the_release_workflow_deletes_nothing_it_does_not_own(
    make_service: ServiceFactory, gate: Gate, situation: str
):
    service = make_service(gate.handler)
    release = service.deploy_claim_release()
    cloud = service.cloud
    if situation == "claim of another execution":
        # A hangs in its business step past its lease; B takes the key over and completes
        ended = service.start(FIRST)
        assert gate.entered.wait(10)
        cloud.clock.advance(service.settings.lease + 1)
        newer = service.run(FIRST)
        expected = service.records()
        assert [(r["status"], owner_execution(r["owner"])) for r in expected] == [("COMPLETED", newer.arn)]
        # ...then A is stopped: its ABORTED event arrives after the takeover
        cloud.sfn.stop_execution(executionArn=ended)
        gate.open()
        assert cloud.wait(ended).status == "ABORTED"
    elif situation == "persistence error":
        cloud.faults.api_error("dynamodb", "UpdateItem", "InternalServerError", status_code=500)
        gate.open()
        ended = service.run(FIRST).arn
        # the business step may have run: that claim is left to its lease
        expected = service.records()
        assert [(r["status"], owner_execution(r["owner"])) for r in expected] == [("INPROGRESS", ended)]
    else:
        gate.open()
        ended = service.run({"amount": 1}).arn
        expected = []

    # When the ended execution's status change starts the release workflow
    released = released_by(service, release)

    # Then the release workflow touched nothing
    assert released.status == "SUCCEEDED"
    assert released.states[-1] == "NothingToRelease"
    assert service.records() == expected
    assert len(expected) == (0 if situation == "no key" else 1)
    gate.open()


# -- hostile input ---------------------------------------------------------------------------------
NAMED_ERRORS = {"IdempotencyKeyError", "IdempotencyAlreadyInProgressError", "IdempotencyValidationError"}
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=25,
)


def nested(depth: int) -> Any:
    value: Any = {"orderId": "deep"}
    for level in range(depth):
        value = {"level": level, "inner": value} if level % 2 else [value]
    return value


SPECIAL_EVENTS = [
    None,
    [],
    {},
    "just a string",
    0,
    -1.5e308,
    2**64 + 1,
    [1, "two", {"orderId": "in-a-list"}],
    {"orderId": "unicode ✓ 注文 🍕", "note": "\u0000\u001f\u2028"},
    # near the 256 KB state limit: the key Lambda carries the event, so the input may use ~255 KB
    {"orderId": "x" * 1000, "padding": "y" * 250_000},
    nested(60),
]


def digest(event: Any, context: Any) -> dict[str, Any]:
    """A business step whose small result proves exactly which event it received."""
    rendered = json.dumps(event, sort_keys=True)
    return {"sha256": hashlib.sha256(rendered.encode()).hexdigest(), "size": len(rendered)}


def check_hostile_run(service: IdempotentService, event: Any) -> None:
    first = service.run(event)
    again = service.run(event)
    for result in (first, again):
        assert result.error != "States.Runtime", result.cause
        assert result.status == "SUCCEEDED" or result.error in NAMED_ERRORS, (result.error, result.cause)
    if first.status == "SUCCEEDED":
        # A null Payload reaches a Lambda as {} (the lambda:invoke integration sends "{}" for null)
        assert first.output == digest({} if event is None else event, None)
        assert again.output_json == first.output_json
    # The record the state machine wrote is under the very key Powertools computes (or there is none)
    expected_key = powertools_key(
        event, prefix=service.settings.key_prefix, jmespath=service.settings.event_key_jmespath
    )
    records = service.records()
    if expected_key is None or first.status != "SUCCEEDED":
        assert records == []
    else:
        assert [(record["id"], record["status"]) for record in records] == [(expected_key, "COMPLETED")]
        assert first.states[-1] == "Complete"
        assert again.states[-1] == "Replay"


@pytest.mark.parametrize("key_path", ["orderId", ""])
@pytest.mark.parametrize("event", SPECIAL_EVENTS, ids=lambda e: type(e).__name__ + str(len(json.dumps(e))))
def test_hostile_inputs_end_with_a_result_or_a_named_error(
    make_service: ServiceFactory, key_path: str, event: Any
):
    service = make_service(digest, IDEMPOTENCY_EVENT_KEY_JMESPATH=key_path)
    check_hostile_run(service, event)


# Events that carry the key field, its value any JSON value, next to other fields
keyed_events = st.builds(
    lambda value, rest: {**rest, "orderId": value},
    json_values,
    st.dictionaries(st.text(max_size=10), json_values, max_size=3),
)


@pytest.mark.property
@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(event=keyed_events | json_values, key_path=st.sampled_from(["orderId", ""]))
def test_generated_events_end_with_a_result_or_a_named_error(
    make_service: ServiceFactory, event: Any, key_path: str
):
    service = make_service(digest, IDEMPOTENCY_EVENT_KEY_JMESPATH=key_path)
    check_hostile_run(service, event)


@pytest.mark.parametrize("body", ["{not json", "", "[1, 2", "null", "42"])
def test_undecodable_json_under_powertools_json_is_a_key_error(make_service: ServiceFactory, body: str):
    service = make_service(
        lambda e, c: {"echo": e}, IDEMPOTENCY_EVENT_KEY_JMESPATH="powertools_json(body).orderId"
    )
    result = service.run({"body": body})
    if body in ("null", "42"):  # valid JSON without an orderId: no key, no record
        assert result.status == "SUCCEEDED"
        assert result.states[-1] == "ExecuteWithoutRecord"
    else:
        assert result.error == "IdempotencyKeyError"
        assert "powertools_json(body).orderId" in result.cause
        assert service.business_runs == 0
    assert service.records() == []


@pytest.mark.parametrize("result_value", [{}, [], 0, "", False, None, {"big": "z" * 150_000}])
def test_falsy_and_large_results_are_recorded_and_replayed(make_service: ServiceFactory, result_value: Any):
    service = make_service(lambda e, c: result_value, IDEMPOTENCY_EVENT_KEY_JMESPATH="orderId")
    first = service.run(FIRST)
    replay = service.run(FIRST)
    assert first.output == result_value
    assert replay.output_json == first.output_json
    assert outcome(replay) == "Replay"


@pytest.mark.parametrize(
    ("answer", "recorded"),
    [
        ({"amount": Decimal("10.50"), "count": Decimal("3")}, {"amount": 10.5, "count": 3}),
        ({"ratio": float("nan")}, '{"ratio": NaN}'),
    ],
    ids=["decimals", "nan"],
)
def test_a_result_lambda_writes_as_no_json_holds_is_recorded_as_step_functions_read_it(
    make_service: ServiceFactory, answer: Any, recorded: Any
):
    # Given a business step answering Decimals (as boto3 reads DynamoDB numbers), or NaN, which
    # Lambda's Python runtime writes and no JSON text holds
    service = make_service(lambda e, c: answer, IDEMPOTENCY_EVENT_KEY_JMESPATH="orderId")

    # When it runs, and a duplicate follows
    first = service.run(FIRST)
    replay = service.run(FIRST)

    # Then Decimals are numbers, and NaN's answer is the string Step Functions read it as (fix 148):
    # the output and the record are JSON, and the duplicate replays the same without a second run
    assert first.status == "SUCCEEDED", first.cause
    assert first.output == recorded
    assert json.loads(first.output_json, parse_constant=_not_json) == recorded
    assert json.loads(service.record_for(FIRST)["data"]["S"], parse_constant=_not_json) == recorded
    assert (outcome(replay), replay.output_json) == ("Replay", first.output_json)
    assert service.business_runs == 1


def _not_json(token: str) -> Any:
    raise AssertionError(f"{token} is not JSON")


@pytest.mark.parametrize("code", [None, 3, "stopping"], ids=["no-reason", "status-3", "message"])
def test_a_business_step_that_exits_its_runtime_fails_at_once_as_lambda_answers(
    make_service: ServiceFactory, code: int | str | None
):
    # Given a business step that ends its runtime's process (sys.exit) instead of returning
    def exits(event: Any, context: Any) -> Any:
        raise SystemExit(code)

    service = make_service(exits)

    # When it runs
    failed = service.run(FIRST)

    # Then the execution fails at once with Lambda's Runtime.ExitError, the exit status in its cause
    # (a message exits 1, as Python prints it), and the claim is released for a retry
    assert failed.status == "FAILED"
    assert failed.error == "Runtime.ExitError"
    reason = "exit status 3" if code == 3 else "exit status 1" if code else "without providing a reason"
    assert reason in json.loads(failed.cause)["errorMessage"]
    assert any(state.endswith("Release") for state in failed.states)
    assert service.record_for(FIRST) is None
    assert service.run(FIRST).error == "Runtime.ExitError"
    assert service.business_runs == 2


def test_the_release_workflow_leaves_a_newer_claim_in_progress(make_service: ServiceFactory):
    # Given A hanging past its lease, and B holding the key now, its business step still running
    gates = TwoGates()
    service = make_service(gates.handler)
    release = service.deploy_claim_release()
    cloud = service.cloud
    try:
        late = service.start(FIRST)
        assert gates.entered[0].wait(10)
        cloud.clock.advance(service.settings.lease + 1)
        newer = service.start(FIRST)
        assert gates.entered[1].wait(10)

        # When A is stopped, and its ABORTED event starts the release workflow
        cloud.sfn.stop_execution(executionArn=late)
        gates.gates[0].set()
        assert cloud.wait(late).status == "ABORTED"
        released = released_by(service, release)

        # Then B's claim, INPROGRESS, is left alone: the owner clause refused the delete
        assert released.states[-2:] == ["KeyedRelease", "NothingToRelease"]
        record = service.record_for(FIRST)
        assert (owner_execution(record["owner"]["S"]), record["status"]["S"]) == (newer, "INPROGRESS")
        gates.gates[1].set()
        assert cloud.wait(newer).states[-1] == "Complete"
    finally:
        gates.open_all()


def test_the_release_workflow_leaves_the_named_executions_own_completed_record(make_service: ServiceFactory):
    # Given an execution that completed (its own record, COMPLETED)
    service = make_service()
    release = service.deploy_claim_release()
    completed = service.run(FIRST)
    before = service.records()
    assert [(owner_execution(r["owner"]), r["status"]) for r in before] == [(completed.arn, "COMPLETED")]

    # When an ABORTED event names that very execution (a stop that landed just after Complete)
    event = {"detail": {"executionArn": completed.arn, "status": "ABORTED", "input": json.dumps(FIRST)}}
    result = service.cloud.run(release, event)

    # Then the release tried and was refused by the status clause: the order is not run again
    assert result.states[-2:] == ["KeyedRelease", "NothingToRelease"]
    assert service.records() == before


@pytest.mark.parametrize(
    ("detail", "path_end"),
    [
        pytest.param(
            {"status": "ABORTED", "input": None, "inputDetails": {"included": False}},
            "InputOmitted",
            id="input left out",
        ),
        pytest.param({"status": "FAILED"}, "InputOmitted", id="no input field"),
        # (these two reach the question whether the execution runs again: it does not exist)
        pytest.param({"status": "ABORTED", "input": json.dumps(FIRST)}, "ExecutionNow", id="no error field"),
        pytest.param(
            {"status": "ABORTED", "input": json.dumps(FIRST), "error": None}, "ExecutionNow", id="null error"
        ),
        pytest.param(
            {"status": "FAILED", "input": json.dumps(FIRST), "error": "IdempotencyPersistenceError"},
            "WorthReleasing",
            id="persistence error",
        ),
    ],
)
def test_the_release_workflow_reads_only_fields_that_are_there(
    make_service: ServiceFactory, detail: dict[str, Any], path_end: str
):
    # Given a status change event with optional fields missing or null (AWS omits large inputs)
    service = make_service()
    release = service.deploy_claim_release()
    event = {"detail": {"executionArn": f"{service.state_machine_arn}:ended", **detail}}

    # When the release workflow gets it
    result = service.cloud.run(release, event)

    # Then it ends in "nothing to release", never States.Runtime
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert result.states[-2:] == [path_end, "NothingToRelease"]
    if path_end == "InputOmitted":
        assert "claim ends with its lease" in result.output["reason"]
