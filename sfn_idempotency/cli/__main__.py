"""``python -m sfn_idempotency.cli``: the ``sfn-idempotency`` command."""

from sfn_idempotency.cli.main import run

run()
