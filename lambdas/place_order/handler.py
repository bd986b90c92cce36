"""Lambda entry point of the example business step."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from .orders import place_order

logger = Logger(service="place-order")


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    order = place_order(event)
    logger.info("Order placed", order_id=order["orderId"], placed_order_id=order["placedOrderId"])
    return order
