"""Lambda entry point: one charge per call, so a replay is visibly the first call's result."""

from __future__ import annotations

import uuid
from typing import Any


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return {"paymentId": event["paymentId"], "chargeId": str(uuid.uuid4()), "amount": event["amount"]}
