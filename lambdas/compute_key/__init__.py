"""Computes the idempotency key, validation hash and clock values for the state machine."""
