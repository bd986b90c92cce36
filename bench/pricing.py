"""AWS list prices used for the cost columns (us-east-1), with the day they were written down."""

PRICES_AS_OF = "2026-11-29"
REGION = "us-east-1"
STANDARD_TRANSITION_USD = 0.025 / 1_000  # Step Functions Standard, per state transition
DYNAMODB_WRITE_REQUEST_USD = 0.625 / 1_000_000  # on-demand, per write request unit (item <= 1 KB)
DYNAMODB_READ_REQUEST_USD = (
    0.125 / 1_000_000
)  # on-demand, per read request unit (strongly consistent <= 4 KB)
LAMBDA_REQUEST_USD = 0.20 / 1_000_000  # per request, before duration
LAMBDA_GB_SECOND_USD = 0.0000166667
# Duration of our two small functions (256 MB) at ~10 ms each, rounded up to 1 ms billing.
ASSUMED_LAMBDA_GB_SECONDS = 0.25 * 0.010

EXPRESS_REQUEST_USD = 1.00 / 1_000_000  # Step Functions Express, per execution
EXPRESS_GB_SECOND_USD = 0.00001667  # Express duration, first 1,000 GB-hours a month
# An Express execution is billed in 64 MB memory chunks and 100 ms steps: the order pipeline (two
# ~10 ms Lambdas, three DynamoDB calls, Pass and Choice states) assumed at 200 ms in one chunk.
ASSUMED_EXPRESS_GB_SECONDS = 0.064 * 0.2

DYNAMODB_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem"})
DYNAMODB_READS = frozenset({"GetItem"})


def cost_per_million(
    transitions: int, dynamodb_calls: dict[str, int], lambda_invocations: int, *, express: bool = False
) -> dict[str, float]:
    """USD per million executions of one path, by service. A Standard execution pays per state
    transition; an Express one per execution and duration (ASSUMED_EXPRESS_GB_SECONDS)."""
    writes = sum(n for op, n in dynamodb_calls.items() if op in DYNAMODB_WRITES)
    reads = sum(n for op, n in dynamodb_calls.items() if op in DYNAMODB_READS)
    million = 1_000_000
    stepfunctions = (
        EXPRESS_REQUEST_USD + ASSUMED_EXPRESS_GB_SECONDS * EXPRESS_GB_SECOND_USD
        if express
        else transitions * STANDARD_TRANSITION_USD
    )
    return {
        "stepfunctions": stepfunctions * million,
        "dynamodb": (writes * DYNAMODB_WRITE_REQUEST_USD + reads * DYNAMODB_READ_REQUEST_USD) * million,
        "lambda": lambda_invocations
        * (LAMBDA_REQUEST_USD + ASSUMED_LAMBDA_GB_SECONDS * LAMBDA_GB_SECOND_USD)
        * million,
    }
