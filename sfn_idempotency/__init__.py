"""sfn-idempotency: exactly-once business steps orchestrated by AWS Step Functions."""

__version__ = "0.2.0"
