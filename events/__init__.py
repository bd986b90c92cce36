"""EventBridge patterns read by the CDK rules and the local engine; shipped as ``sfn_idempotency.events``."""
