"""The ASL state machines: the single source of truth, shipped as package data of ``sfn_idempotency.statemachines``."""
