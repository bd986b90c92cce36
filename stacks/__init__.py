"""CDK: the idempotency table, the reusable IdempotentWorkflow construct, and the service stack."""
