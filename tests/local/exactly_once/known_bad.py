"""Known-bad workflows: each breaks exactly-once in one way, and the explorer must find it.

Six are the project's own flow with one safeguard taken out (built from the flow as it is today,
so they follow it as it changes); one is the flow this project shipped before its redrive fix (kept
as it was, with the release workflow of that time); one is a user's workflow that calls its
payment function outside the idempotent step.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sfn_idempotency.flow.patterns import load_pattern
from sfn_idempotency.flow.provable_key import without_provable_key
from sfn_idempotency.flow.resources import EXECUTION_ENDED_PATTERN, IDEMPOTENCY_ASL
from sfn_idempotency.local import IdempotentService, LocalCloud
from sfn_idempotency.local.explorer import Target, invariants
from sfn_idempotency.settings import example_settings
from sfn_idempotency.wrap import wrap_state

HERE = Path(__file__).parent
ORDER = {"orderId": "o-explored", "amount": 42}
LONG_STEP_TIMEOUT_SECONDS = 3600  # far beyond the lease the flow computes from its settings


@dataclass(frozen=True)
class KnownBad:
    name: str
    broken: str  # the invariant the explorer must report
    build: Callable[[LocalCloud, Path], Target]


def flow() -> dict[str, Any]:
    """The standalone flow keyed by the Lambda alone: each design's flaw is in the claims it makes
    (ClaimComputedKey's), the provable key's first claim left out."""
    return without_provable_key(json.loads(IDEMPOTENCY_ASL.read_text(encoding="utf-8")))


def service_target(
    cloud: LocalCloud,
    definition: dict[str, Any],
    folder: Path,
    *,
    large_results: bool = False,
    **service: Any,
) -> Target:
    """The standalone flow ``definition`` deployed as the construct deploys it, release workflow
    included, with the example's place-order function as the side effect."""
    path = folder / "flow.asl.json"
    path.write_text(json.dumps(definition), encoding="utf-8")
    built = IdempotentService(
        cloud, example_settings({}, IDEMPOTENCY_EVENT_KEY_JMESPATH="orderId"), asl_path=path, **service
    )
    built.deploy_claim_release()
    return target_of(built, large_results=large_results)


def target_of(service: IdempotentService, *, large_results: bool = False) -> Target:
    """The service's flow as the explorer checks it; with ``large_results``, its business step may
    also answer results near the size limit (only the workflow that breaks there needs them)."""
    return Target(
        service.cloud,
        service.state_machine_arn,
        [ORDER],
        watch=[service.business_function],
        key="orderId",
        tables=[service.table_name],
        large_results=large_results,
    )


def without_owner_fence_on_complete(cloud: LocalCloud, folder: Path) -> Target:
    """Complete writes the result whoever holds the claim now (Powertools' own update has no
    condition): a run redriven at Complete overwrites a newer claim, and both answer."""
    definition = flow()
    complete = definition["States"]["Complete"]["Parameters"]
    del complete["ConditionExpression"]
    del complete["ExpressionAttributeNames"]["#owner"]
    del complete["ExpressionAttributeValues"][":owner"]
    return service_target(cloud, definition, folder)


def claim_over_a_claim_in_progress(cloud: LocalCloud, folder: Path) -> Target:
    """Claim refuses a COMPLETED record only: a duplicate claims over a live claim and runs while
    the first run still goes on under it (beyond the issue's seven: the overlap invariant bites)."""
    definition = flow()
    definition["States"]["ClaimComputedKey"]["Parameters"].update(
        {
            "ConditionExpression": "attribute_not_exists(#id) OR #status <> :completed",
            "ExpressionAttributeNames": {"#id": "id", "#status": "status"},
            "ExpressionAttributeValues": {":completed": {"S": "COMPLETED"}},
        }
    )
    return service_target(cloud, definition, folder)


def without_release_in_catch(cloud: LocalCloud, folder: Path) -> Target:
    """A failed business step goes straight to its error: its claim stays until the lease ends."""
    definition = flow()
    for catcher in definition["States"]["Execute"]["Catch"]:
        if catcher["Next"] == "Release":
            catcher["Next"] = "RouteBusinessError"
    return service_target(cloud, definition, folder)


def release_a_result_too_large(cloud: LocalCloud, folder: Path) -> Target:
    """A result too large to carry or record releases its key, as any failure does (this project's
    design before issue 72): the order was placed, and the retry places it again."""
    definition = flow()
    for state in ("Execute", "Complete"):
        for catcher in definition["States"][state]["Catch"]:
            if catcher["Next"] == "KeepResultTooLarge":
                catcher["Next"] = "Release"
    return service_target(cloud, definition, folder, large_results=True)


def business_step_before_claim(cloud: LocalCloud, folder: Path) -> Target:
    """The order is placed first and claimed after: every duplicate places it again."""
    definition = flow()
    states = definition["States"]
    execute = states["Execute"]
    states["PlaceFirst"] = {
        "Type": "Task",
        "Resource": execute["Resource"],
        "Parameters": {"FunctionName": "${BusinessFunctionArn}", "Payload.$": "$.event"},
        "Assign": execute["Assign"],
        "ResultPath": execute["ResultPath"],
        "Next": "ClaimComputedKey",
    }
    states["RouteByKey"]["Default"] = "PlaceFirst"
    states["Execute"] = {"Type": "Pass", "Next": "Complete"}
    return service_target(cloud, definition, folder)


def lease_shorter_than_the_step(cloud: LocalCloud, folder: Path) -> Target:
    """The business step may run an hour, the claim's lease is minutes: a duplicate takes the key
    over while the first run still goes on, and both place the order."""
    definition = flow()
    execute = definition["States"]["Execute"]
    del execute["TimeoutSecondsPath"]
    execute["TimeoutSeconds"] = LONG_STEP_TIMEOUT_SECONDS
    return service_target(cloud, definition, folder)


def release_after_complete(cloud: LocalCloud, folder: Path) -> Target:
    """After Complete, the claim is deleted as after a failure: the COMPLETED record goes with it."""
    definition = flow()
    states = definition["States"]
    complete = states["Complete"]
    release = copy.deepcopy(states["Release"])
    release.pop("Catch", None)
    # The answer moves to the last state: the result, as the business step gave it
    release.update({"ResultSelector": {"value.$": "$sfnIdempotencyResult.value"}, "ResultPath": "$"})
    release.update({"OutputPath": complete.pop("OutputPath"), "End": True})
    release.pop("Next", None)
    complete.pop("ResultSelector")
    complete.update({"ResultPath": None})
    complete.pop("End", None)
    complete["Next"] = "ForgetTheClaim"
    states["ForgetTheClaim"] = release
    return service_target(cloud, definition, folder)


def redrive_unsafe_design(cloud: LocalCloud, folder: Path) -> Target:
    """The flow and release workflow as this project shipped them before its redrive fix (commit
    6a678a4): a redriven run resumed its business step without a claim of its own."""
    service = IdempotentService(
        cloud,
        example_settings({}, IDEMPOTENCY_EVENT_KEY_JMESPATH="orderId"),
        asl_path=HERE / "redrive_unsafe.asl.json",
    )
    release = cloud.create_state_machine(
        "redrive-unsafe-release",
        HERE / "redrive_unsafe_release.asl.json",
        {"ComputeKeyFunctionArn": service.compute_key.arn, "TableName": service.table_name},
        workflow_type="EXPRESS",
    )
    pattern = load_pattern(EXECUTION_ENDED_PATTERN, {"stateMachineArn": [service.state_machine_arn]})
    cloud.create_rule("redrive-unsafe-ended", pattern, release)
    return target_of(service)


CHECKOUT = HERE.parent.parent / "apps" / "checkout"  # a user's checkout app: its ASL and handlers
PAYMENT = "Pay"


def checkout_target(cloud: LocalCloud, idempotent_state: str) -> Target:
    """The user's checkout with one of its two Tasks made idempotent inline, its payment watched."""
    functions = {
        f"{name}FunctionArn": cloud.add_function(name, f"handlers.{name.lower()}", code_dir=CHECKOUT).arn
        for name in ("Reserve", PAYMENT)
    }
    wrapped = wrap_state(
        (CHECKOUT / "checkout.asl.json").read_text(encoding="utf-8"),
        idempotent_state,
        key_prefix="checkout",
        event_key_jmespath="orderId",
    )
    arn = cloud.create_state_machine(
        "user-checkout", wrapped, {**cloud.idempotency_substitutions(), **functions}
    )
    return Target(cloud, arn, [ORDER], watch=[PAYMENT], key="orderId")


def payment_outside_the_step(cloud: LocalCloud, folder: Path) -> Target:
    """A user's checkout whose Reserve step is idempotent and whose Pay step, after it, calls the
    payment function outside any idempotent step: once per duplicate."""
    return checkout_target(cloud, "Reserve")


KNOWN_BAD = (
    KnownBad("no owner fence on Complete", invariants.DIFFERENT_ANSWERS, without_owner_fence_on_complete),
    KnownBad("no Release in the Catch", invariants.CLAIM_LEFT, without_release_in_catch),
    KnownBad("business step before the claim", invariants.RAN_AFTER_COMPLETED, business_step_before_claim),
    KnownBad("lease shorter than the step", invariants.TWO_SUCCESSES, lease_shorter_than_the_step),
    KnownBad("Release after Complete", invariants.TWO_SUCCESSES, release_after_complete),
    KnownBad("the redrive-unsafe design", invariants.TWO_SUCCESSES, redrive_unsafe_design),
    KnownBad("payment outside the idempotent step", invariants.RAN_AFTER_COMPLETED, payment_outside_the_step),
    KnownBad("claim over a claim in progress", invariants.OVERLAP, claim_over_a_claim_in_progress),
    KnownBad("a result too large releases its key", invariants.TWO_SUCCESSES, release_a_result_too_large),
)
