"""What one schedule did: its timeline, its executions, the runs of the watched side effects, and
what the invariants found."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sfn_idempotency.local.explorer.runs import EffectRun
from sfn_idempotency.local.explorer.schedules import Schedule


@dataclass
class ExecutionTrace:
    """One execution the schedule started (or a probe at its end)."""

    label: str
    arn: str
    request: int
    probe: bool = False
    name: str = ""
    status: str = "RUNNING"
    error: str | None = None
    output: Any = None
    # The record lifetime (how many times a COMPLETED record had expired) in which it last began to
    # run, at its start or its redrive: what it answers is that lifetime's.
    began_in_epoch: int = 0
    ended_in_epoch: int | None = None  # the lifetime in which it was last seen ended
    stopped: int = 0  # how many times the schedule stopped it or timed it out
    redriven: int = 0


@dataclass
class Moment:
    """One line of the timeline: a step, what each execution did in it, and the records."""

    step: int
    action: str
    states: dict[str, list[str]]  # label: states entered during the step
    statuses: dict[str, str]  # label: its status, where it changed
    calls: list[str]
    records_before: list[dict[str, Any]]
    records_after: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "action": self.action,
            "states": self.states,
            "statuses": self.statuses,
            "calls": self.calls,
            "records_before": self.records_before,
            "records_after": self.records_after,
        }


@dataclass(frozen=True)
class Finding:
    """A broken invariant (a violation) or a run that is at least once by nature (a note)."""

    invariant: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"invariant": self.invariant, "message": self.message}


@dataclass
class ScheduleOutcome:
    schedule: Schedule
    executions: list[ExecutionTrace] = field(default_factory=list)
    runs: list[EffectRun] = field(default_factory=list)
    timeline: list[Moment] = field(default_factory=list)
    violations: list[Finding] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)
    covered: set[str] = field(default_factory=set)  # what the schedule exercised, by name
    claims_left: list[str] = field(default_factory=list)  # failed executions that left their claim

    def execution(self, label: str) -> ExecutionTrace:
        return next(e for e in self.executions if e.label == label)
