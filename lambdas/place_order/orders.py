"""Placing an order: the side effect that must happen once per order."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from typing import Any


class InvalidOrderError(Exception):
    """The order cannot be placed; retrying the same order will not help."""


def order_request(event: Any) -> Any:
    """The order inside an EventBridge event (``detail``) or an SQS record (JSON ``body``), or the
    event itself when it is the order."""
    if isinstance(event, dict) and "detail-type" in event and "detail" in event:
        return event["detail"]
    if isinstance(event, dict) and event.get("eventSource") == "aws:sqs" and "body" in event:
        try:
            return json.loads(event["body"])
        except json.JSONDecodeError as error:
            raise InvalidOrderError(f"the SQS message body is not JSON: {error}") from None
    return event


def place_order(event: Any) -> dict[str, Any]:
    """A fresh order id and timestamp on every call, so a replay is visibly the first run's result."""
    request = order_request(event)
    if not isinstance(request, dict):
        raise InvalidOrderError(f"an order is a JSON object, got {type(request).__name__}")
    order_id = request.get("orderId")
    amount = request.get("amount")
    if not isinstance(order_id, str) or not order_id:
        raise InvalidOrderError("orderId must be a non-empty string")
    if isinstance(amount, bool) or not isinstance(amount, int | float) or amount <= 0:
        raise InvalidOrderError(f"amount must be a positive number, got {amount!r}")
    return {
        "orderId": order_id,
        "amount": amount,
        "placedOrderId": str(uuid.uuid4()),
        "placedAt": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
        "status": "PLACED",
    }
