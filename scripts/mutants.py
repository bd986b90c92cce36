"""`make mutants`: deliberate bugs, one at a time, and whether the tests notice.

Each mutant edits one thing in the working tree (the ASL through its parsed JSON: the state is found
by its integration, the expression edited; the key Lambda through one expression of its source), runs
the tests that should catch it, and restores the file whatever happens (do not commit while it runs:
a `git add` then would take the mutant along). Every mutant must be killed,
or be listed in EQUIVALENT with the reason. Not part of `make test` (a few minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPOSITORY_ROOT = Path(__file__).resolve().parent.parent
FLOW = REPOSITORY_ROOT / "statemachines" / "idempotency.asl.json"
RELEASE = REPOSITORY_ROOT / "statemachines" / "release_abandoned_claim.asl.json"
KEYS = REPOSITORY_ROOT / "lambdas" / "compute_key" / "keys.py"
COMPUTATION = REPOSITORY_ROOT / "lambdas" / "compute_key" / "computation.py"
TEST_DEADLINE_SECONDS = 900

# Behaviour: runs of the state machine. The static pins (tests/unit/test_asl_contract.py) are left
# out, so that a clause mutant must be caught by what the flow does, not by its text.
FLOW_TESTS = (
    "tests/local/test_idempotent_flow.py",
    "tests/local/test_leases_and_faults.py",
    "tests/local/test_powertools_interop.py",
    "tests/local/test_resilience.py",
)
# What no local run can show (moto ignores ConsistentRead; a bigger retry budget is a longer outage)
STATIC_TESTS = ("tests/unit/test_asl_contract.py",)
KEY_TESTS = (
    "tests/unit/test_keys_match_powertools.py",
    "tests/unit/test_compute_key_handler.py",
    "tests/local/test_idempotent_flow.py",
    "tests/local/test_resilience.py",
)
# Mutant id -> why no test can tell it from the original.
EQUIVALENT: dict[str, str] = {}

Document = dict[str, Any]


@dataclass(frozen=True)
class Mutant:
    id: str
    description: str
    path: Path
    mutate: Callable[[str], str]
    tests: tuple[str, ...]


# -- ASL mutations, on the parsed document -------------------------------------------------------------
def state_by_resource(states: Document, resource: str) -> Document:
    """The one state of the flow that calls ``resource`` (an integration ARN suffix)."""
    matches: list[Document] = [s for s in states.values() if str(s.get("Resource", "")).endswith(resource)]
    (state,) = matches
    return state


def asl(edit: Callable[[Document], None]) -> Callable[[str], str]:
    def mutate(text: str) -> str:
        document = json.loads(text)
        edit(document["States"])
        return json.dumps(document, indent=2)

    return mutate


def drop_clause(resource: str, clause: str) -> Callable[[str], str]:
    def edit(states: Document) -> None:
        parameters = state_by_resource(states, resource)["Parameters"]
        condition = parameters["ConditionExpression"]
        joiner = " OR " if " OR " in condition else " AND "
        clauses = condition.split(joiner) if joiner == " AND " else _or_clauses(condition)
        remaining = [c for c in clauses if c != clause]
        if len(remaining) == len(clauses):
            raise LookupError(f"no clause {clause!r} in {condition!r}")
        if remaining:
            parameters["ConditionExpression"] = joiner.join(remaining)
        else:
            del parameters["ConditionExpression"]
        _prune_names(parameters)

    return asl(edit)


def _or_clauses(condition: str) -> list[str]:
    # Top-level OR only: the lease clause is one parenthesised conjunction.
    return [part.strip() for part in re.split(r" OR (?![^()]*\))", condition)]


def _prune_names(parameters: Document) -> None:
    """DynamoDB refuses names and values an expression does not use: drop them with the clause."""
    used = " ".join(str(parameters.get(k, "")) for k in ("ConditionExpression", "UpdateExpression"))
    for field in ("ExpressionAttributeNames", "ExpressionAttributeValues"):
        mapping = parameters.get(field, {})
        for name in [n for n in mapping if n not in used]:
            del mapping[name]
        if field in parameters and not mapping:
            del parameters[field]


def set_path(name: str, path: tuple[str | int, ...], value: Any) -> Callable[[str], str]:
    def edit(states: Document) -> None:
        target = states[name]
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value

    return asl(edit)


def flip_validation_routing(states: Document) -> None:
    """Replay when the stored validation hash differs, fail when it matches."""
    for choice in states["RouteByRecord"]["Choices"]:
        for rule in choice.get("And", []):
            if "StringEqualsPath" in rule:
                rule_copy = dict(rule)
                rule.clear()
                rule["Not"] = rule_copy


def skip_release(states: Document) -> None:
    (catch,) = [c for c in states["Execute"]["Catch"] if c["ErrorEquals"] == ["States.ALL"]]
    catch["Next"] = "RouteBusinessError"


def no_redrive_fence(states: Document) -> None:
    """The business function called in every run, as before the fence (issue 37)."""
    parameters = states["Execute"]["Parameters"]
    del parameters["FunctionName.$"]
    parameters["FunctionName"] = "${BusinessFunctionArn}"


def unbounded_reclaim(states: Document) -> None:
    states["ClaimAgainOrGiveUp"]["Default"] = "Claim"


def replay_the_wrapper(states: Document) -> None:
    del states["Replay"]["OutputPath"]


# -- key Lambda mutations, one expression each ------------------------------------------------------------
def replace(old: str, new: str) -> Callable[[str], str]:
    def mutate(text: str) -> str:
        if text.count(old) != 1:
            raise LookupError(f"expected one {old!r}")
        return text.replace(old, new)

    return mutate


MUTANTS = (
    Mutant("claim-free", "Claim without attribute_not_exists(#id)", FLOW,
           drop_clause("dynamodb:putItem", "attribute_not_exists(#id)"), FLOW_TESTS),
    Mutant("claim-expired", "Claim without #expiry < :now", FLOW,
           drop_clause("dynamodb:putItem", "#expiry < :now"), FLOW_TESTS),
    Mutant("claim-lease", "Claim without the ended-lease takeover", FLOW,
           drop_clause("dynamodb:putItem",
                       "(#status = :inprogress AND attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_in_millis)"),
           FLOW_TESTS),
    Mutant("complete-owner", "Complete without #owner = :owner", FLOW,
           drop_clause("dynamodb:updateItem", "#owner = :owner"), FLOW_TESTS),
    Mutant("release-owner", "Release without #owner = :owner", FLOW,
           drop_clause("dynamodb:deleteItem", "#owner = :owner"), FLOW_TESTS),
    Mutant("abandoned-status", "Release workflow without #status = :inprogress", RELEASE,
           drop_clause("dynamodb:deleteItem", "#status = :inprogress"), ("tests/local/test_resilience.py",)),
    Mutant("abandoned-owner", "Release workflow without its owner clause", RELEASE,
           drop_clause("dynamodb:deleteItem", "(begins_with(#owner, :claims_of_execution) OR #owner = :owner)"),
           ("tests/local/test_resilience.py",)),
    Mutant("abandoned-prefix", "Release workflow matches the ARN as a bare prefix (exec-1 releases exec-10)", RELEASE,
           replace("States.Format('{}#', $.detail.executionArn)", "States.Format('{}', $.detail.executionArn)"),
           ("tests/local/test_fencing.py",)),
    Mutant("owner-per-execution", "One claim token for every claim (Map items share an owner)", COMPUTATION,
           replace("claim_token=uuid.uuid4().hex", 'claim_token="shared"'), ("tests/local/test_fencing.py",)),
    Mutant("read-eventual", "Read with ConsistentRead false", FLOW,
           set_path("Read", ("Parameters", "ConsistentRead"), False), STATIC_TESTS),
    Mutant("claim-retry-budget", "Claim retries 10 times instead of 4", FLOW,
           set_path("Claim", ("Retry", 0, "MaxAttempts"), 10), STATIC_TESTS),
    Mutant("execute-no-retry", "Execute without its Retry", FLOW,
           set_path("Execute", ("Retry",), []), FLOW_TESTS),
    Mutant("validation-flipped", "Replay on a validation mismatch, fail on a match", FLOW,
           asl(flip_validation_routing), FLOW_TESTS),
    Mutant("no-key-claims", "No key: claim anyway", FLOW,
           set_path("RouteByKey", ("Choices", 0, "Or", 1, "BooleanEquals"), True), FLOW_TESTS),
    Mutant("no-release", "A failed business step keeps its claim", FLOW, asl(skip_release), FLOW_TESTS),
    Mutant("reclaim-unbounded", "Claim again without a bound", FLOW, asl(unbounded_reclaim), FLOW_TESTS),
    Mutant("no-redrive-fence", "A redriven business step runs without a claim of its own run", FLOW,
           asl(no_redrive_fence), ("tests/local/test_redrive_flow.py",)),
    Mutant("replay-wrapped", "Replay outputs the wrapper, not the stored result", FLOW,
           asl(replay_the_wrapper), FLOW_TESTS),
    Mutant("key-unsorted", "Key rendered without sort_keys", KEYS,
           replace("json.dumps(selection, sort_keys=True)", "json.dumps(selection)"), KEY_TESTS),
    Mutant("key-big-ints-as-floats", "Integers above 2**53 read as floats before hashing", KEYS,
           replace("json.dumps(selection, sort_keys=True)",
                   "json.dumps(json.loads(json.dumps(selection), parse_int=float), sort_keys=True)"), KEY_TESTS),
    Mutant("key-zero-is-missing", "0 and false are no key", KEYS,
           replace("if isinstance(selection, int | float | bool):\n        return False",
                   "if isinstance(selection, int | float | bool):\n        return not selection"), KEY_TESTS),
    Mutant("no-validation-hash", "The validation hash is always empty", KEYS,
           replace('    if not expression:\n        return ""\n    return digest(', '    if True:\n        return ""\n    return digest('),
           KEY_TESTS),
    Mutant("lease-is-timeout", "The lease is the timeout, not the computed lease", COMPUTATION,
           replace("now_ms + settings.lease * MILLISECONDS_PER_SECOND",
                   "now_ms + settings.timeout_seconds * MILLISECONDS_PER_SECOND"), KEY_TESTS),
)  # fmt: skip


@contextmanager
def mutated(mutant: Mutant) -> Iterator[None]:
    original = mutant.path.read_text(encoding="utf-8")
    try:
        replace_file(mutant.path, mutant.mutate(original))
        yield
    finally:
        replace_file(mutant.path, original)


def replace_file(path: Path, text: str) -> None:
    """Whole or not at all: a run stopped mid-write never leaves a truncated file behind."""
    staged = path.with_name(f".{path.name}.mutant")
    staged.write_text(text, encoding="utf-8")
    os.replace(staged, path)


def killed(mutant: Mutant) -> bool:
    """Run the mutant's tests, stopping at the first failure: any failure kills it."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *mutant.tests],
        cwd=REPOSITORY_ROOT,
        capture_output=True,
        text=True,
        timeout=TEST_DEADLINE_SECONDS,
        check=False,
    )
    if result.returncode not in (0, 1):
        raise RuntimeError(
            f"{mutant.id}: pytest could not run ({result.returncode}): {result.stdout[-2000:]}"
        )
    return result.returncode == 1


def clean(paths: set[Path]) -> bool:
    status = subprocess.run(
        ["git", "status", "--porcelain", "--", *map(str, paths)],
        cwd=REPOSITORY_ROOT,
        capture_output=True,
        text=True,
    )
    return status.returncode == 0 and not status.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="mutant ids to run (default: all)")
    arguments = parser.parse_args(argv)
    # A stopped run must still restore the file it mutated: SIGTERM unwinds like an exception.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    chosen = [m for m in MUTANTS if not arguments.only or m.id in arguments.only]
    if not clean({m.path for m in chosen}):
        print(
            "mutants: the files to mutate have uncommitted changes; commit or stash them first",
            file=sys.stderr,
        )
        return 2
    survivors = []
    for mutant in chosen:
        started = time.monotonic()
        with mutated(mutant):
            verdict = "killed" if killed(mutant) else "SURVIVED"
        if verdict == "SURVIVED" and mutant.id in EQUIVALENT:
            verdict = f"equivalent ({EQUIVALENT[mutant.id]})"
        elif verdict == "SURVIVED":
            survivors.append(mutant.id)
        print(
            f"{mutant.id:<24} {verdict:<9} {time.monotonic() - started:5.1f} s  {mutant.description}",
            flush=True,
        )
    print(
        f"\n{len(chosen) - len(survivors)} of {len(chosen)} killed or equivalent; survived: {survivors or 'none'}"
    )
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
