"""The example's workflows with an inline idempotent step: the order pipeline and the SQS batch.

Their ASL files hold a plain ``PlaceOrder`` Task; here it is wrapped (sfn_idempotency.wrap) with the
example settings, for the CDK stack and the local engine alike. The wrapped definitions need the
placeholders ``${IdempotencyKeyFunctionArn}``, ``${IdempotencyTableName}`` and
``${PlaceOrderFunctionArn}``. Both run as Express workflows (no nested execution, no ``.sync``), and
are wrapped as such (``express=True``: a synchronous execution has no RedriveCount to read).
"""

from __future__ import annotations

from sfn_idempotency.flow.resources import ORDER_PIPELINE_INLINE_ASL, SQS_BATCH_ASL
from sfn_idempotency.flow.wrapping import step_fields, wrap_state
from sfn_idempotency.lambdas.compute_key.settings import IdempotencySettings
from sfn_idempotency.settings import ORDER_MESSAGE_KEY_JMESPATH

PLACE_ORDER_STEP = "PlaceOrder"
BUSINESS_FUNCTION_PLACEHOLDER = "PlaceOrderFunctionArn"


def order_pipeline(settings: IdempotencySettings) -> str:
    """The pipeline's PlaceOrder sees the order itself (its InputPath): keyed as the direct workflow
    keys it, so both share records (same prefix, same key)."""
    return wrap_state(
        ORDER_PIPELINE_INLINE_ASL.read_text(encoding="utf-8"),
        PLACE_ORDER_STEP,
        **step_fields(settings),
        express=True,
    )


def sqs_batch(settings: IdempotencySettings) -> str:
    """Each record is keyed on its body's orderId (JSON text): the same order as the other workflows."""
    fields = {**step_fields(settings), "event_key_jmespath": ORDER_MESSAGE_KEY_JMESPATH}
    return wrap_state(SQS_BATCH_ASL.read_text(encoding="utf-8"), PLACE_ORDER_STEP, **fields, express=True)
