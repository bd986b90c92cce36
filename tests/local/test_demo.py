"""The main job runs end to end and shows every path it promises."""

from __future__ import annotations

import io

from sfn_idempotency import demo


def test_demo_walks_every_scenario_and_exits_zero():
    # When the demo runs
    out = io.StringIO()
    exit_code = demo.main(out)

    # Then every scenario behaved as expected, and the table shows them
    text = out.getvalue()
    assert exit_code == 0, text
    assert "UNEXPECTED" not in text
    for expected in (
        "first order",
        "duplicate (client resend)",
        "IdempotencyAlreadyInProgressError",
        "PaymentGatewayTimeout",
        "retry of the failed order",
        "InvalidOrderError",
        "Read > RouteByRecord > Replay",
        "Execute > Release > RouteBusinessError > BusinessFailed",
    ):
        assert expected in text
    assert "3 records, all ['COMPLETED']; business step ran 5 times for 7 executions." in text
    # And the metrics per outcome counted each scenario's outcome once, by the metric filters on the
    # state machine's logs (three first runs: the first order, the first of the two, the retry)
    assert (
        "Outcomes (metric filters on the state machine's logs): FirstRuns 3, Replays 1, "
        "InProgressRefusals 1, ReleasedFailures 2, LeaseTakeovers 0, PersistenceErrors 0"
    ) in text
