"""Lambda handlers, one package per function: ``compute_key`` (the key Lambda, the construct's asset) and
``place_order`` (the example business step). Each imports only within itself (relative imports), so the
same code is the top-level ``compute_key`` package on AWS and ``sfn_idempotency.lambdas.compute_key`` here."""
