"""Placing an order: the side effect that must happen once per order."""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from typing import Any

# The demo drives its scenarios through the order itself, so that they run the same on AWS (where
# no fault can be injected) and locally: "simulate": {"delaySeconds": 2} or {"error": "..."}.
MAX_SIMULATED_DELAY_SECONDS = 10


class InvalidOrderError(Exception):
    """The order cannot be placed; retrying the same order will not help."""


class PaymentGatewayTimeout(Exception):
    """The payment gateway did not answer; a retry may succeed."""


SIMULATED_ERRORS: dict[str, type[Exception]] = {"PaymentGatewayTimeout": PaymentGatewayTimeout}


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
    simulate(request.get("simulate"))
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


def simulate(instructions: Any) -> None:
    """The demo's hooks: hold the claim a while (``delaySeconds``, at most 10), or fail with one of
    the known errors (``error``). Anything else is an invalid order."""
    if instructions is None:
        return
    if not isinstance(instructions, dict) or set(instructions) - {"delaySeconds", "error"}:
        raise InvalidOrderError(f"simulate takes delaySeconds and error, got {instructions!r}")
    delay = instructions.get("delaySeconds", 0)
    if (
        isinstance(delay, bool)
        or not isinstance(delay, int | float)
        or not 0 <= delay <= MAX_SIMULATED_DELAY_SECONDS
    ):
        raise InvalidOrderError(
            f"simulate.delaySeconds must be 0..{MAX_SIMULATED_DELAY_SECONDS}, got {delay!r}"
        )
    time.sleep(delay)
    error = instructions.get("error")
    if error is not None:
        if error not in SIMULATED_ERRORS:
            raise InvalidOrderError(
                f"simulate.error must be one of {sorted(SIMULATED_ERRORS)}, got {error!r}"
            )
        raise SIMULATED_ERRORS[error]("simulated: the gateway did not answer")
