"""Where the project's single sources of truth live: the ASL files and the Lambda code."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
STATEMACHINES_DIR = PROJECT_ROOT / "statemachines"
LAMBDAS_DIR = PROJECT_ROOT / "lambdas"
IDEMPOTENCY_ASL = STATEMACHINES_DIR / "idempotency.asl.json"
ORDER_WORKFLOW_ASL = STATEMACHINES_DIR / "order_workflow.asl.json"
SQS_BATCH_ASL = STATEMACHINES_DIR / "sqs_batch.asl.json"
RELEASE_ASL = STATEMACHINES_DIR / "release_abandoned_claim.asl.json"
EVENTS_DIR = PROJECT_ROOT / "events"
ORDER_PLACED_PATTERN = EVENTS_DIR / "order_placed.pattern.json"
EXECUTION_ENDED_PATTERN = EVENTS_DIR / "execution_ended.pattern.json"
