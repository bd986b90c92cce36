"""The speed fixes of issue 31 (56 to 59) change no behaviour: what they keep, checked without
timing anything (the figures are `make bench`'s)."""

from __future__ import annotations

import json
import threading
from typing import Any

from sfn_idempotency.local import IdempotentService, LocalCloud
from sfn_idempotency.local.compat.execution_ends import ExecutionEnds
from sfn_idempotency.resources import ORDER_WORKFLOW_ASL

ROLE = "arn:aws:iam::123456789012:role/speed"
JOIN_DEADLINE_SECONDS = 10  # a deadline for the test's own threads, not a measurement


def test_an_end_wakes_the_waiter_of_that_execution_and_every_pause():
    # Given a waiter for one execution, and a pause that waits for any end
    ends, execution = ExecutionEnds(), object()
    ended = threading.Event()
    outcome: list[bool] = []
    ends.sleep(0)  # a thread's first pause returns at once; the next one waits
    waiter = threading.Thread(target=lambda: outcome.append(ends.wait_for_end(execution, ended.is_set, 60)))

    def pause_twice() -> None:
        ends.sleep(0)
        ends.sleep(60)

    pause = threading.Thread(target=pause_twice)
    waiter.start()
    pause.start()
    # When the execution ends and its end is announced
    ended.set()
    ends.announce(execution)
    # Then both woke (long before their 60 s), and the waiter was told it ended
    waiter.join(JOIN_DEADLINE_SECONDS)
    pause.join(JOIN_DEADLINE_SECONDS)
    assert (waiter.is_alive(), pause.is_alive(), outcome) == (False, False, [True])


def test_a_waiter_is_told_when_its_execution_has_not_ended():
    ends = ExecutionEnds()
    assert ends.wait_for_end(object(), lambda: False, 0) is False


def test_a_nested_workflow_still_waits_for_its_child_and_takes_its_output(local_cloud: LocalCloud):
    # Given the order pipeline, which runs the idempotency flow with startExecution.sync:2
    service = IdempotentService(local_cloud)
    pipeline = service.nest_in(ORDER_WORKFLOW_ASL, "pipeline")
    # When an order runs through it twice
    first = local_cloud.run(pipeline, {"orderId": "o-nested", "amount": 3})
    again = local_cloud.run(pipeline, {"orderId": "o-nested", "amount": 3})
    # Then each run waited for its child, which placed the order once and replayed it after
    assert (first.status, again.status) == ("SUCCEEDED", "SUCCEEDED")
    assert first.output == again.output
    assert service.business_runs == 1


def test_a_machines_timeout_still_times_it_out_and_a_maps_iterations_still_run(local_cloud: LocalCloud):
    # Given a machine with TimeoutSeconds whose Task outlasts it, and one whose Map has no timeout
    release = threading.Event()

    def slow(event: Any, context: Any) -> Any:
        release.wait(JOIN_DEADLINE_SECONDS)
        return event

    function = local_cloud.add_function("slow", slow)
    timed = {
        "TimeoutSeconds": 1,
        "StartAt": "Slow",
        "States": {"Slow": {"Type": "Task", "Resource": function.arn, "End": True}},
    }
    mapped = {
        "StartAt": "Fan",
        "States": {
            "Fan": {
                "Type": "Map",
                "MaxConcurrency": 2,
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "INLINE"},
                    "StartAt": "Double",
                    "States": {"Double": {"Type": "Pass", "Parameters": {"n.$": "$"}, "End": True}},
                },
                "End": True,
            }
        },
    }
    arns = {
        name: local_cloud.sfn.create_state_machine(name=name, definition=json.dumps(body), roleArn=ROLE)[
            "stateMachineArn"
        ]
        for name, body in (("timed", timed), ("mapped", mapped))
    }
    try:
        # When both run, then the first timed out and the second mapped every item, in order
        assert local_cloud.run(arns["timed"], {}).status == "TIMED_OUT"
    finally:
        release.set()
    assert local_cloud.run(arns["mapped"], [1, 2, 3]).output == [{"n": 1}, {"n": 2}, {"n": 3}]
