"""The data files the package ships: the ASL, the EventBridge patterns and the Lambda code.

They live in the repository's top-level ``statemachines/``, ``events/`` and ``lambdas/`` folders and
are built into the wheel as the packages ``sfn_idempotency.statemachines``, ``.events`` and
``.lambdas`` (pyproject's package-dir mapping), so there is one copy. Found through
``importlib.resources``: the same code works in a checkout, an editable install and the wheel.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def package_dir(package: str) -> Path:
    """The folder of an installed data package. CDK assets and moto need real files, so an
    install that is not on the file system (a zip) is refused with a clear message."""
    location = files(package)
    if not isinstance(location, Path) or not location.is_dir():
        raise FileNotFoundError(f"{package} is not installed as a folder on disk ({location!r})")
    return location


STATEMACHINES_DIR = package_dir("sfn_idempotency.statemachines")
LAMBDAS_DIR = package_dir("sfn_idempotency.lambdas")
EVENTS_DIR = package_dir("sfn_idempotency.events")
APIS_DIR = package_dir("sfn_idempotency.apis")
IDEMPOTENCY_ASL = STATEMACHINES_DIR / "idempotency.asl.json"
IDEMPOTENCY_JSONATA_ASL = STATEMACHINES_DIR / "idempotency.jsonata.asl.json"
# The flow in each query language: the same states, records, outputs and error names.
IDEMPOTENCY_FLOWS = {"JSONPath": IDEMPOTENCY_ASL, "JSONata": IDEMPOTENCY_JSONATA_ASL}
ORDER_WORKFLOW_ASL = STATEMACHINES_DIR / "order_workflow.asl.json"
# The key Lambda's handler, under LAMBDAS_DIR (the asset root on AWS, the code folder locally).
COMPUTE_KEY_HANDLER = "compute_key.handler.handler"
ORDER_PIPELINE_INLINE_ASL = STATEMACHINES_DIR / "order_pipeline_inline.asl.json"
SQS_BATCH_ASL = STATEMACHINES_DIR / "sqs_batch.asl.json"
RELEASE_ASL = STATEMACHINES_DIR / "release_abandoned_claim.asl.json"
HTTP_ORDERS_ASL = STATEMACHINES_DIR / "http_orders.asl.json"
ORDERS_REQUEST_TEMPLATE = APIS_DIR / "orders.request.vtl"
ORDERS_RESPONSE_TEMPLATE = APIS_DIR / "orders.response.vtl"
ORDER_PLACED_PATTERN = EVENTS_DIR / "order_placed.pattern.json"
EXECUTION_ENDED_PATTERN = EVENTS_DIR / "execution_ended.pattern.json"
