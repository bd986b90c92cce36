"""sfn-idempotency: exactly-once business steps orchestrated by AWS Step Functions."""

__version__ = "0.1.0"
