"""A user's tests: their own ASL on local_cloud, their own Lambda behind the idempotent workflow."""

from pathlib import Path

from sfn_idempotency.testing import IdempotentService, LocalCloud, load_settings
from sfn_idempotency.wrap import wrap_state

PROJECT = Path(__file__).resolve().parent.parent
PAYMENT = {"paymentId": "p-1", "amount": 12}


def test_my_own_state_machine_runs_my_own_lambda(local_cloud: LocalCloud) -> None:
    # Given my Lambda and my ASL on the local engine
    charge = local_cloud.add_function("charge", "charge.handler.handler", code_dir=PROJECT / "functions")
    machine = local_cloud.create_state_machine(
        "payment", PROJECT / "statemachines" / "payment.asl.json", {"ChargeFunctionArn": charge.arn}
    )
    # When I run it
    result = local_cloud.run(machine, PAYMENT)
    # Then it passed through both states and said what it charged
    assert result.status == "SUCCEEDED"
    assert result.states == ["Charge", "Charged"]
    assert result.output["message"] == f"charged {result.output['charge']['chargeId']}"


def test_a_duplicate_replays_the_first_result(idempotent_service: IdempotentService) -> None:
    # Given the packaged example workflow
    order = {"orderId": "o-1", "amount": 5}
    # When the same order arrives twice
    first = idempotent_service.run(order)
    again = idempotent_service.run(order)
    # Then the second replays the first, and the order was placed once
    assert first.status == again.status == "SUCCEEDED"
    assert again.output_json == first.output_json
    assert again.states[-1] == "Replay"
    assert idempotent_service.business_runs == 1


def test_my_lambda_runs_once_per_payment(local_cloud: LocalCloud) -> None:
    # Given my own Lambda behind the idempotent workflow, keyed on paymentId
    settings = load_settings(
        {"IDEMPOTENCY_KEY_PREFIX": "payments", "IDEMPOTENCY_EVENT_KEY_JMESPATH": "paymentId"}
    )
    service = IdempotentService(
        local_cloud,
        settings,
        name="payments",
        business_handler="charge.handler.handler",
        business_code_dir=PROJECT / "functions",
    )
    # When the same payment is started three times
    results = [service.run(PAYMENT) for _ in range(3)]
    # Then it was charged once and every run returned that one charge
    assert service.business_runs == 1
    assert {result.output["chargeId"] for result in results} == {results[0].output["chargeId"]}
    (record,) = service.records()
    assert record["status"] == "COMPLETED"
    assert record["id"] == service.key_for(PAYMENT)


def test_my_charge_step_inline_in_my_express_machine_runs_once(local_cloud: LocalCloud) -> None:
    # Given my own ASL with its Charge step wrapped inline, as an Express machine
    charge = local_cloud.add_function("charge", "charge.handler.handler", code_dir=PROJECT / "functions")
    definition = wrap_state(
        (PROJECT / "statemachines" / "payment.asl.json").read_text(encoding="utf-8"),
        "Charge",
        key_prefix="checkout",
        event_key_jmespath="paymentId",
        express=True,  # run synchronously: its context has no RedriveCount to read
    )
    machine = local_cloud.create_state_machine(
        "checkout",
        definition,
        {**local_cloud.idempotency_substitutions(), "ChargeFunctionArn": charge.arn},
        workflow_type="EXPRESS",
    )
    # When the same payment goes through it twice, synchronously
    first, again = local_cloud.run_sync(machine, PAYMENT), local_cloud.run_sync(machine, PAYMENT)
    # Then my machine's output is identical and the card was charged once
    assert first.status == again.status == "SUCCEEDED"
    assert again.output_json == first.output_json
    assert "Charge.Replay" in again.states
    assert local_cloud.lambdas.invocations("charge") == 1
