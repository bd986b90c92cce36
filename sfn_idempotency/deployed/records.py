"""Idempotency records as an operator reads them."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

_deserializer = TypeDeserializer()


def plain(item: dict[str, Any]) -> dict[str, Any]:
    """A DynamoDB item (typed attribute values) as plain Python values."""
    return {name: _deserializer.deserialize(value) for name, value in item.items()}


OWNER_SEPARATOR = "#"  # no execution name may hold one, so "<ARN>#" begins that execution's claims only


def owner_execution(owner: str) -> str:
    """The execution ARN in a claim's owner, ``<execution ARN>#<run>#<claim token>`` (a record
    written before runs holds ``<execution ARN>#<claim token>``, and before claim tokens the ARN alone)."""
    return owner.partition(OWNER_SEPARATOR)[0]


def describe(record: dict[str, Any], now: dt.datetime) -> str:
    """Status, owner, expiry and lease in human time, and the stored result."""
    lines = [
        ("key", record["id"]),
        ("status", record.get("status", "?")),
        ("owner", record.get("owner", "- (written by Powertools or an older version)")),
        ("execution", owner_execution(record["owner"]) if "owner" in record else "-"),
        ("expires", _moment(int(record["expiration"]), now) if "expiration" in record else "-"),
        (
            "lease ends",
            _moment(int(record["in_progress_expiration"]) / 1000, now)
            if "in_progress_expiration" in record
            else "-",
        ),
        ("validation", record.get("validation") or "-"),
    ]
    text = "\n".join(f"{name:<11} {value}" for name, value in lines)
    if "data" in record:
        text += "\nresult\n" + json.dumps(json.loads(record["data"]), indent=2, ensure_ascii=False)
    return text


def _moment(epoch_seconds: float, now: dt.datetime) -> str:
    moment = dt.datetime.fromtimestamp(epoch_seconds, dt.UTC)
    delta = (moment - now).total_seconds()
    relative = f"in {_duration(delta)}" if delta >= 0 else f"{_duration(-delta)} ago"
    return f"{moment.isoformat(timespec='milliseconds').replace('+00:00', 'Z')} ({relative})"


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"
