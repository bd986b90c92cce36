"""The user's own fixtures, beside the ones the sfn-idempotency plugin provides."""

from pathlib import Path

import pytest

from sfn_idempotency.testing import LocalCloud
from sfn_idempotency.wrap import wrap_state

PROJECT = Path(__file__).resolve().parent.parent


@pytest.fixture
def checkout(local_cloud: LocalCloud) -> str:
    """My checkout on local_cloud, its Charge step wrapped with the replay marker at $.chargeReplay
    (its receipt goes out only after a first charge); the machine's ARN."""
    charge = local_cloud.add_function("charge", "charge.handler.handler", code_dir=PROJECT / "functions")
    receipt = local_cloud.add_function("receipt", "receipt.handler.handler", code_dir=PROJECT / "functions")
    definition = wrap_state(
        (PROJECT / "statemachines" / "checkout.asl.json").read_text(encoding="utf-8"),
        "Charge",
        key_prefix="checkout",
        event_key_jmespath="paymentId",
        replay_marker="$.chargeReplay",
    )
    substitutions = {
        **local_cloud.idempotency_substitutions(),
        "ChargeFunctionArn": charge.arn,
        "ReceiptFunctionArn": receipt.arn,
    }
    return local_cloud.create_state_machine("checkout", definition, substitutions)
