"""The example app's own stacks, built only from ``sfn_idempotency.cdk`` (not shipped in the wheel)."""
