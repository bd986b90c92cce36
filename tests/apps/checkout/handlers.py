"""A user's checkout functions: reserve the stock, take the payment."""

from __future__ import annotations

from typing import Any


def reserve(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return {"reserved": event["orderId"]}


def pay(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return {"charged": event["amount"], "orderId": event["orderId"]}
