"""Placing an order: the side effect that must happen once per order."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any


class InvalidOrderError(Exception):
    """The order cannot be placed; retrying the same order will not help."""


def place_order(request: Any) -> dict[str, Any]:
    """A fresh order id and timestamp on every call, so a replay is visibly the first run's result."""
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
