"""What must hold after a schedule, whatever it did. Each check answers findings: violations, and
runs that are at least once by nature (a call whose caller stopped waiting, or that was told it
failed after it took effect: no protocol can know whether it took effect, so it is reported apart).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from sfn_idempotency.local.explorer.outcome import ExecutionTrace, Finding, ScheduleOutcome
from sfn_idempotency.local.explorer.runs import EffectRun
from sfn_idempotency.local.explorer.schedules import INJECTED_ERRORS
from sfn_idempotency.local.explorer.target import Target

RAN_AFTER_COMPLETED = "ran again after its record was COMPLETED"
OVERLAP = "two runs at once while both held a claim"
TWO_SUCCESSES = "two runs took effect"
DIFFERENT_ANSWERS = "duplicates got different answers"
UNSAFE_ERROR = "an execution failed with an error that is not safe to retry"
CLAIM_LEFT = "a failed execution left the key claimed"
KEY_STUCK = "the key is stuck"
AT_LEAST_ONCE = "at least once by nature"
AT_MOST_ONCE = "at most once by design"
# A result too large to record: its key is kept, and every request fails this, until it expires.
RESULT_TOO_LARGE = "IdempotencyResultTooLargeError"
USER = "your invariant"


def check(outcome: ScheduleOutcome, target: Target) -> None:
    """Fill ``outcome.violations`` and ``outcome.notes``."""
    for checker in (_runs_at_entry, _effects, _answers, _claims_left, _probes):
        checker(outcome, target)
    for invariant in target.invariants:
        _users(outcome, invariant)


def _runs_at_entry(outcome: ScheduleOutcome, target: Target) -> None:
    for run in outcome.runs:
        if run.completed_before and any(
            other.order < run.order and other.function == run.function and other.epoch == run.epoch
            for other in outcome.runs
            if other.certain
        ):
            outcome.violations.append(
                Finding(
                    RAN_AFTER_COMPLETED,
                    f"{run.function} run {run.number} ({run.execution}) began while the key's record was "
                    "COMPLETED and unexpired, after an earlier run had taken effect for certain",
                )
            )
    for earlier, later in _overlapping(outcome.runs):
        outcome.violations.append(
            Finding(
                OVERLAP,
                f"{later.function} run {later.number} ({later.execution}) began while {earlier.function} "
                f"run {earlier.number} ({earlier.execution}) still ran under a claim that had not lapsed",
            )
        )


def _overlapping(runs: list[EffectRun]) -> list[tuple[EffectRun, EffectRun]]:
    """Pairs where a run began while another, still awaited by its execution, held an unlapsed
    claim: what its lease promised the other would not happen."""
    pairs = []
    for later in runs:
        for earlier in runs:
            if earlier.order >= later.order or earlier.claim_until_ms is None:
                continue
            if earlier.awaited_when.get(later.order) and earlier.claim_until_ms > later.entered_ms:
                pairs.append((earlier, later))
    return pairs


def _effects(outcome: ScheduleOutcome, target: Target) -> None:
    """Per epoch (the record's lifetime), at most one run took effect for certain."""
    by_epoch: dict[tuple[str, int], list[EffectRun]] = defaultdict(list)
    for run in outcome.runs:
        if run.took_effect:
            by_epoch[run.function, run.epoch].append(run)
    for runs in by_epoch.values():
        certain = [r for r in runs if r.certain]
        names = ", ".join(f"run {r.number} ({r.execution}, {r.fate})" for r in runs)
        if len(certain) > 1:
            outcome.violations.append(Finding(TWO_SUCCESSES, f"{runs[0].function}: {names}"))
        elif len(runs) > 1:
            outcome.notes.append(
                Finding(
                    AT_LEAST_ONCE,
                    f"{runs[0].function}: {names}; all but one were stopped, timed out or abandoned "
                    "mid-call, or failed after their effect",
                )
            )


def _answers(outcome: ScheduleOutcome, target: Target) -> None:
    """Duplicates in one record lifetime (epoch) answer alike. An execution that ran across an
    expiry (held while the clock passed it) answers as one of the lifetimes it spanned: which one
    depends on when it read or claimed the key, before the expiry (a replay held at its end) or
    after it (a duplicate held before its claim)."""
    safe = target.all_safe_errors(INJECTED_ERRORS)
    answered: list[tuple[ExecutionTrace, Any]] = []
    for trace in outcome.executions:
        answer = target.answer(trace.output) if trace.status == "SUCCEEDED" else None
        if answer is not None:
            answered.append((trace, answer))
        elif trace.status == "FAILED" and trace.error not in safe:
            outcome.violations.append(Finding(UNSAFE_ERROR, f"{trace.label} failed with {trace.error}"))
    first: dict[int, tuple[str, Any]] = {}  # epoch: (label, the first answer)
    for trace, answer in answered:
        if _epochs(trace) == [trace.began_in_epoch]:
            label, expected = first.setdefault(trace.began_in_epoch, (trace.label, answer))
            if answer != expected:
                outcome.violations.append(_different(trace, answer, label, expected))
    for trace, answer in answered:
        spanned = _epochs(trace)
        # (its answer may be the only one of a lifetime it spanned: then nothing contradicts it)
        contradicted = all(epoch in first and answer != first[epoch][1] for epoch in spanned)
        if len(spanned) > 1 and contradicted:
            outcome.violations.append(_different(trace, answer, *first[spanned[0]]))


def _epochs(trace: ExecutionTrace) -> list[int]:
    ended = trace.began_in_epoch if trace.ended_in_epoch is None else trace.ended_in_epoch
    return list(range(trace.began_in_epoch, ended + 1))


def _different(trace: ExecutionTrace, answer: Any, label: str, expected: Any) -> Finding:
    where = _where_they_differ(answer, expected)
    return Finding(DIFFERENT_ANSWERS, f"{trace.label}'s answer differs from {label}'s at {where}")


def _where_they_differ(answer: Any, expected: Any, path: str = "$") -> str:
    """The first path at which two answers differ, with both values there (shortened)."""
    if isinstance(answer, dict) and isinstance(expected, dict):
        for name in sorted(set(answer) | set(expected)):
            if answer.get(name, _MISSING) != expected.get(name, _MISSING):
                return _where_they_differ(
                    answer.get(name, _MISSING), expected.get(name, _MISSING), f"{path}.{name}"
                )
    return f"{path}: {_shown(answer)} against {_shown(expected)}"


_MISSING = "(missing)"
_SHOWN_CHARACTERS = 80


def _shown(value: Any) -> str:
    text = value if value is _MISSING else json.dumps(value, sort_keys=True)
    return text if len(text) <= _SHOWN_CHARACTERS else text[: _SHOWN_CHARACTERS - 1] + "…"


def _claims_left(outcome: ScheduleOutcome, target: Target) -> None:
    for label in outcome.claims_left:
        trace = outcome.execution(label)
        outcome.violations.append(
            Finding(
                CLAIM_LEFT,
                f"{label} failed with {trace.error} and left its claim: until a release workflow or the "
                "lease frees the key, every retry fails",
            )
        )


def _probes(outcome: ScheduleOutcome, target: Target) -> None:
    probes = [e for e in outcome.executions if e.probe]
    if not probes or probes[0].status == "SUCCEEDED":
        return
    first = probes[0]
    stopped = [e.label for e in outcome.executions if e.stopped and not e.probe]
    if all(probe.error == RESULT_TOO_LARGE for probe in probes):
        outcome.notes.append(
            Finding(
                AT_MOST_ONCE,
                f"every new request failed with {RESULT_TOO_LARGE}: a business step's result too "
                "large to record keeps its key until the record expires, so the step is not run again",
            )
        )
        return
    if stopped:
        outcome.notes.append(
            Finding(
                AT_LEAST_ONCE,
                f"{first.label} failed with {first.error} until the lease ended: the claim of "
                f"{', '.join(stopped)}, stopped or timed out, waits for its lease",
            )
        )
    else:
        failed = [
            f"{e.label} ({e.error})" for e in outcome.executions if e.status == "FAILED" and not e.probe
        ]
        outcome.violations.append(
            Finding(
                CLAIM_LEFT,
                f"once every execution had ended ({', '.join(failed) or 'none failed'}), a new request "
                f"failed with {first.error}: a retry before the lease ends cannot succeed",
            )
        )
    last = probes[-1]
    if last is not first and last.status != "SUCCEEDED":
        outcome.violations.append(
            Finding(KEY_STUCK, f"{last.label}, after the leases had passed, failed with {last.error}")
        )


def _users(outcome: ScheduleOutcome, invariant: Callable[[ScheduleOutcome], None]) -> None:
    name = getattr(invariant, "__name__", repr(invariant))
    try:
        invariant(outcome)
    except AssertionError as error:
        outcome.violations.append(Finding(USER, f"{name}: {error}"))
