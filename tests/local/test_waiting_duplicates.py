"""A duplicate that waits for the first run (IDEMPOTENCY_WAIT_FOR_IN_PROGRESS, opt-in), in every
form of the flow: it replays the first run's result, claims a key the first run released, and fails
as today once its waits are used up."""

from __future__ import annotations

import pytest

from sfn_idempotency.local import IdempotentService
from tests.local.conftest import FLAVOURS, Gate, ServiceFactory

ORDER = {"orderId": "o-wait", "amount": 7}
WAITING = {"IDEMPOTENCY_WAIT_FOR_IN_PROGRESS": "true"}
DEADLINE_SECONDS = 20


@pytest.fixture(params=[False, True], ids=["standalone", "inline"])
def inline(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.fixture(params=FLAVOURS)
def query_language(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def waiting_state(service: IdempotentService) -> str:
    prefix = "Execute." if service.inline else ""
    return f"{prefix}WaitForFirstRun"


def start_duplicate_while_the_first_runs(service: IdempotentService, gate: Gate) -> tuple[str, str]:
    """(the first execution, a duplicate that has begun to wait for it)."""
    first = service.start(ORDER)
    assert gate.entered.wait(DEADLINE_SECONDS)
    duplicate = service.start(ORDER)
    service.cloud.wait_until(
        lambda: waiting_state(service) in service.cloud.states_so_far(duplicate),
        timeout=DEADLINE_SECONDS,
    )
    return first, duplicate


def test_a_waiting_duplicate_ends_with_the_first_run_s_result(make_service: ServiceFactory, gate: Gate):
    # Given waiting on, and a first run in its business step; When a duplicate arrives and waits
    service = make_service(gate.handler, **WAITING)
    first, duplicate = start_duplicate_while_the_first_runs(service, gate)

    # And the first run then finishes
    gate.open()
    first_result = service.cloud.wait(first)

    # Then the duplicate ends with the first run's result, and the business step ran once
    duplicate_result = service.cloud.wait(duplicate)
    assert first_result.status == duplicate_result.status == "SUCCEEDED"
    assert duplicate_result.output_json == first_result.output_json
    assert service.business_runs == 1
    assert service.flow_states(duplicate_result)[-1] == "Replay"


def test_a_waiting_duplicate_claims_a_key_the_first_run_released(make_service: ServiceFactory):
    # Given a first run whose business step fails, once the duplicate waits
    gate = Gate(fail_with=RuntimeError("payment gateway down"))
    service = make_service(gate.handler, **WAITING)
    first, duplicate = start_duplicate_while_the_first_runs(service, gate)
    gate.open()

    # Then the first run fails and releases its claim, and the duplicate claims the key and runs
    assert service.cloud.wait(first).error == "RuntimeError"
    duplicate_result = service.cloud.wait(duplicate)
    assert duplicate_result.status == "SUCCEEDED", duplicate_result.cause
    assert duplicate_result.output["status"] == "PLACED"
    assert service.business_runs == 2
    assert service.flow_states(duplicate_result)[-2:] == ["Execute", "Complete"]


def test_a_duplicate_whose_waits_run_out_fails_as_today(make_service: ServiceFactory, gate: Gate):
    # Given waiting on for at most one second, and a first run that takes longer
    service = make_service(gate.handler, **WAITING, IDEMPOTENCY_MAX_WAIT_SECONDS="1")
    first = service.start(ORDER)
    assert gate.entered.wait(DEADLINE_SECONDS)

    # When a duplicate arrives, Then after its one wait it fails as a duplicate does at once
    duplicate = service.run(ORDER)
    assert duplicate.error == "IdempotencyAlreadyInProgressError"
    states = service.flow_states(duplicate)
    assert states.count("WaitForFirstRun") == 1
    assert states[-1] == "AlreadyInProgress"
    gate.open()
    assert service.cloud.wait(first).status == "SUCCEEDED"
    assert service.business_runs == 1


def test_by_default_a_duplicate_does_not_wait(make_service: ServiceFactory, gate: Gate):
    service = make_service(gate.handler)
    first = service.start(ORDER)
    assert gate.entered.wait(DEADLINE_SECONDS)
    duplicate = service.run(ORDER)
    assert duplicate.error == "IdempotencyAlreadyInProgressError"
    assert "WaitForFirstRun" not in service.flow_states(duplicate)
    gate.open()
    service.cloud.wait(first)
