"""Runs one schedule on the engine: each step moves one execution until every execution has ended
or is held again; at the end everything held is let go, and probes ask whether the key is free."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError

from sfn_idempotency.deployed.records import plain
from sfn_idempotency.local.controls import call_origins, task_deadlines
from sfn_idempotency.local.controls.calls import interceptor
from sfn_idempotency.local.controls.faults import Pause
from sfn_idempotency.local.explorer.outcome import ExecutionTrace, Moment, ScheduleOutcome
from sfn_idempotency.local.explorer.runs import CallObserver, RunContext, Subject
from sfn_idempotency.local.explorer.schedules import DYNAMODB_FAULTS, Schedule, Step
from sfn_idempotency.local.explorer.target import Target

STEP_DEADLINE_SECONDS = 30.0  # a step that does not settle in this long is the engine's failure
QUIET_CHECKS = 2  # consecutive quiet looks
# Between two looks at in-process objects. Every step waits for at least two looks, several times a
# schedule: at 2 ms these sleeps were a quarter of an exploration's time, the process idle.
POLL_SECONDS = 0.0005
SETTLE_ROUNDS = 40  # at the end, held executions let go one at a time: at most this many
LEASE_MARGIN_MS = 1000
UNSUCCESSFUL = ("FAILED", "ABORTED", "TIMED_OUT")
_NAME_IN_ARN = 7  # arn:aws:states:<region>:<account>:execution|express:<machine>:<name>[:<id>]


class ExplorerError(RuntimeError):
    """The engine did not do what a step asked within its deadline."""


@dataclass
class _Held:
    """A target execution's pause (held before a state)."""

    label: str
    pause: Pause


class Director:
    """Runs schedules on one target; a new ``Director`` per exploration."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.cloud = target.cloud
        self.machine = target.state_machine_arn
        self.machine_name = self.machine.rsplit(":", 1)[-1]
        self.tables = target.record_tables()
        self.helpers = target.helper_machines()
        self.express = (
            self.cloud.sfn.describe_state_machine(stateMachineArn=self.machine)["type"] == "EXPRESS"
        )
        self._helper_starts = {arn: _start_at(self.cloud, arn) for arn in self.helpers}
        self._snapshot = {name: self._scan(name) for name in self._all_tables()}

    # -- one schedule ------------------------------------------------------------------------
    def run(self, schedule: Schedule) -> ScheduleOutcome:
        self.outcome = ScheduleOutcome(schedule)
        self.subject: Subject | None = None  # the target execution the step moves
        self._delivered: ExecutionTrace | None = None  # an execution a delivery is starting
        self.epoch = 0
        self.held: list[_Held] = []
        self.helper_pauses: list[Pause] = []
        self.helper_labels: dict[str, str] = {}
        self._helpers_ended: set[str] = set()
        self._states_seen: dict[str, int] = {}
        self.observer = self._observer(frozenset(self.target.watch))
        self._quiesce()  # what an earlier schedule started (a late status change) has ended
        self._known_helpers = {arn: set(self.cloud.executions(arn)) for arn in self.helpers}
        self.restore_tables()
        unwrap = self.cloud.faults.wrap_functions(self.observer)
        interceptor.hooks.insert(0, self.observer.before_call)
        interceptor.answer_hooks.append(self.observer.after_call)
        try:
            for step in schedule.steps:
                self._step(step)
            self._settle()
        finally:
            unwrap()
            interceptor.hooks.remove(self.observer.before_call)
            interceptor.answer_hooks.remove(self.observer.after_call)
            self._let_everything_go()
        self.outcome.runs = list(self.observer.runs)
        for trace in self.outcome.executions:
            self._final(trace)
        return self.outcome

    def _step(self, step: Step) -> None:
        before = self._records()
        action = self._perform(step)
        if action is None:
            return  # a step with nothing to act on (a resume of an execution that is not held...)
        self._moment(action, before)

    def _perform(self, step: Step) -> str | None:
        if step.action == "start":
            return self._start(step)
        if step.action == "clock":
            return self._move_clock(step.past)
        if step.action == "release":
            return self._release_helpers()
        trace = self._execution(step.execution)
        if trace is None:
            return None
        if step.action == "resume":
            return self._resume(trace, step)
        if step.action in ("stop", "time out"):
            return self._end_unsuccessfully(trace, step)
        if step.action == "redrive":
            return self._redrive(trace, step)
        raise ValueError(f"unknown action {step.action!r}")

    # -- actions ---------------------------------------------------------------------------------
    def _start(self, step: Step, *, probe: bool = False) -> str:
        targets = [e for e in self.outcome.executions if not e.probe]
        label = f"P{len(self.outcome.executions) - len(targets) + 1}" if probe else f"E{len(targets) + 1}"
        request = step.request % len(self.target.requests)
        trace = ExecutionTrace(
            label,
            "",
            request,
            probe=probe,
            name=f"{label}-{uuid.uuid4().hex[:12]}",
            began_in_epoch=self.epoch,
        )
        self.outcome.executions.append(trace)  # before it starts: its first calls are known as its own
        self.subject = Subject(label, "")
        armed = self._arm(step)
        via = self.target.via
        if via is None:
            trace.arn = self.cloud.start_execution(
                self.machine, self.target.requests[request], name=trace.name
            )
        else:
            trace.name = ""  # named by the delivery: known at its first call, or once it is listed
            self._delivered = trace
            before = set(self.cloud.executions(self.machine))
            via.send(self.cloud, self.target.requests[request])
            self._wait_until(
                lambda: bool(trace.arn) or bool(set(self.cloud.executions(self.machine)) - before)
            )
            self._bind(trace, trace.arn or min(set(self.cloud.executions(self.machine)) - before))
        self.subject.arn = trace.arn
        self._quiesce_and_disarm(armed)
        self.outcome.covered.add("probe" if probe else "duplicate" if targets else "start")
        return f"{label} starts" + (f", {via.describe()}" if via else "") + self._how(step)

    def _resume(self, trace: ExecutionTrace, step: Step) -> str | None:
        held = next((h for h in self.held if h.label == trace.label and h.pause.holding), None)
        gates = [g for g in self.observer.held_gates() if g.subject.label == trace.label]
        # the call its execution waits for first; else a call it no longer waits for, going on late
        gate = next((g for g in gates if self.observer.still_awaited(g)), gates[0] if gates else None)
        if held is None and gate is None:
            return None
        self.subject = Subject(trace.label, trace.arn)
        armed = self._arm(step)
        if held is not None:
            where = f"from before {held.pause.state_name}"
            self.held.remove(held)
            held.pause.release()
        else:
            assert gate is not None
            where = f"from inside {gate.function}"
            self.outcome.covered.add("late call" if not self._is_running(trace.arn) else "call resumed")
            gate.opened.set()
        self._quiesce_and_disarm(armed)
        return f"{trace.label} goes on {where}" + self._how(step)

    def _end_unsuccessfully(self, trace: ExecutionTrace, step: Step) -> str | None:
        if not self._is_running(trace.arn) or (step.action == "stop" and self.express):
            return None
        self.subject = None
        armed = self._arm(step)
        if step.action == "stop":
            self.cloud.sfn.stop_execution(executionArn=trace.arn)
        else:
            self.cloud.time_out(trace.arn)
        trace.stopped += 1
        for run in self.observer.runs:
            if run.execution == trace.label:
                run.interrupted = True
        where = self._position(trace)
        for held in [h for h in self.held if h.label == trace.label]:
            self.held.remove(held)
            held.pause.release()  # the state it was held before does not run
        self._quiesce_and_disarm(armed)
        self.outcome.covered.add(f"{step.action} {where}")
        verb = "is stopped" if step.action == "stop" else "times out"
        return f"{trace.label} {verb} {where}" + self._how(step)

    def _redrive(self, trace: ExecutionTrace, step: Step) -> str | None:
        if self.express or self.cloud.status_of(trace.arn) not in UNSUCCESSFUL:
            return None
        self.subject = Subject(trace.label, trace.arn)
        armed = self._arm(step)
        try:
            self.cloud.sfn.redrive_execution(executionArn=trace.arn)
        except ClientError as error:
            self._disarm(armed)
            return f"{trace.label} cannot be redriven: {error.response['Error']['Code']}"
        trace.redriven += 1
        trace.began_in_epoch, trace.ended_in_epoch = self.epoch, None
        self._quiesce_and_disarm(armed)
        self.outcome.covered.add("redrive")
        return f"{trace.label} is redriven" + self._how(step)

    def _move_clock(self, past: str) -> str | None:
        if any(h.pause.holding for h in self.held):
            return None  # time passes in calls: not while an execution is held between states
        records = self._records()
        now_ms = self.cloud.clock.now_ms()
        if past == "lease":
            ends = [int(r["in_progress_expiration"]) for r in records if _leased(r)]
        else:
            ends = [int(r["expiration"]) * 1000 for r in records if r.get("status") == "COMPLETED"]
        later = [end for end in ends if end >= now_ms]
        if not later:
            return None
        to_ms = max(later) + LEASE_MARGIN_MS
        timing_out = {arn: self._history_length(arn) for arn in task_deadlines.expiring(to_ms)}
        self.cloud.clock.advance((to_ms - now_ms) / 1000)
        if past == "expiry":
            self.epoch += 1
        self.subject = None
        # A Task whose time-out the clock passed times out now: until its execution has moved on
        self._wait_until(
            lambda: all(self._history_length(a) > n or not self._is_running(a) for a, n in timing_out.items())
        )
        self._quiesce()
        self.outcome.covered.add(f"clock past the {past}")
        return f"the clock moves {(to_ms - now_ms) / 1000:.0f} s, past the {past}"

    def _release_helpers(self) -> str | None:
        holding = [p for p in self.helper_pauses if p.holding]
        if not holding:
            return None
        self.subject = None
        for pause in holding:
            pause.release()
        self._quiesce()
        self.outcome.covered.add("late release workflow")
        labels = ", ".join(self._helper_label(p.execution_arn or "") for p in holding)
        return f"{labels} go on late"

    # -- arming a step ---------------------------------------------------------------------------
    def _arm(self, step: Step) -> list[object]:
        faults = self.cloud.faults
        planned: list[object] = []
        if step.hold is not None and step.hold.state:
            pause = faults.pause_before(step.hold.state, state_machine_arn=self.machine)
            assert self.subject is not None
            self.held.append(_Held(self.subject.label, pause))
            planned.append(pause)
        self.observer.armed.hold_function = step.hold.function if step.hold is not None else ""
        self.observer.armed.faults = [f for f in step.faults if f.service == "lambda"]
        for fault in step.faults:
            if fault.service == "dynamodb":
                code, status, applied = DYNAMODB_FAULTS[fault.kind]
                first = faults.calls_so_far("dynamodb", fault.name) + 1
                planned.append(
                    faults.api_error(
                        "dynamodb",
                        fault.name,
                        code,
                        calls=range(first, first + fault.calls),
                        status_code=status,
                        applied=applied,
                    )
                )
            self.outcome.covered.add(f"fault: {fault.kind}")
        if step.hold_helpers:
            for arn, start_at in self._helper_starts.items():
                pause = faults.pause_before(start_at, state_machine_arn=arn)
                self.helper_pauses.append(pause)
                planned.append(pause)
        return planned

    def _quiesce_and_disarm(self, planned: list[object]) -> None:
        try:
            self._quiesce()
        finally:
            self._disarm(planned)

    def _disarm(self, planned: list[object]) -> None:
        """What the step planned and nobody met is withdrawn; a pause holding an execution stays."""
        unused = [p for p in planned if not (isinstance(p, Pause) and p.entered.is_set())]
        self.cloud.faults.withdraw(*unused)
        self.held = [h for h in self.held if h.pause not in unused]
        self.helper_pauses = [p for p in self.helper_pauses if p not in unused]
        self.observer.armed.hold_function = ""
        self.observer.armed.faults = []

    def _how(self, step: Step) -> str:
        parts = []
        if step.faults:
            parts.append("with " + ", ".join(f.describe() for f in step.faults))
        if step.hold is not None:
            parts.append(f"held {step.hold.describe()}")
        if step.hold_helpers and self.helpers:
            parts.append("its release workflow delayed")
        return f" ({'; '.join(parts)})" if parts else ""

    # -- waiting for the step to settle -----------------------------------------------------------
    def _wait_until(self, condition: Callable[[], bool]) -> None:
        deadline = time.monotonic() + STEP_DEADLINE_SECONDS
        while not condition():
            if time.monotonic() >= deadline:
                raise ExplorerError(f"a step did not settle within {STEP_DEADLINE_SECONDS} s")
            time.sleep(POLL_SECONDS)

    def _quiesce(self) -> None:
        """Until every execution has ended or is held (twice in a row: an execution that just
        ended has sent its status change, and the workflow it starts is seen)."""
        deadline = time.monotonic() + STEP_DEADLINE_SECONDS
        quiet = 0
        while time.monotonic() < deadline:
            quiet = quiet + 1 if self._quiet() else 0
            if quiet >= QUIET_CHECKS:
                return
            time.sleep(POLL_SECONDS)
        raise ExplorerError(f"a step did not settle within {STEP_DEADLINE_SECONDS} s")

    def _quiet(self) -> bool:
        """Whether every running execution is held: before a state, or in a call it still waits
        for (a call held for an earlier run of a redriven execution holds nothing)."""
        held = {h.pause.execution_arn for h in self.held if h.pause.holding}
        held |= {p.execution_arn for p in self.helper_pauses if p.holding}
        held |= {
            g.subject.arn
            for g in self.observer.held_gates()
            if self.observer.still_awaited(g) and not task_deadlines.starting(g.subject.arn)
        }
        going = [e.arn for e in self.outcome.executions if e.arn and not self.cloud.has_settled(e.arn)]
        return all(arn in held for arn in going + self._running_helpers())

    def _running_helpers(self) -> list[str]:
        running = []
        for machine in self.helpers:
            for arn in self.cloud.executions(machine):
                if arn in self._helpers_ended:
                    continue
                if self._is_running(arn):
                    running.append(arn)
                else:
                    self._helpers_ended.add(arn)
        return running

    # -- the end of a schedule -------------------------------------------------------------------
    def _settle(self) -> None:
        """Everything held is let go, one at a time; then probes: a new request now, and another
        once the leases have passed, must each get the answer or run."""
        for _ in range(SETTLE_ROUNDS):
            if self._let_one_go() is None:
                break
        else:
            raise ExplorerError("executions kept being held after the schedule ended")
        before = self._records()
        self._start(Step("start"), probe=True)
        self._moment("(end) P1, a new request once every execution has ended", before)
        probe = self.outcome.executions[-1]
        self._final(probe)
        if probe.status != "SUCCEEDED":
            before = self._records()
            ends = [int(r["in_progress_expiration"]) for r in before if _leased(r)]
            now_ms = self.cloud.clock.now_ms()
            if ends and max(ends) >= now_ms:
                self.cloud.clock.advance((max(ends) + LEASE_MARGIN_MS - now_ms) / 1000)
            self._start(Step("start"), probe=True)
            self._moment("(end) P2, a new request once the leases have passed", before)

    def _let_one_go(self) -> str | None:
        before = self._records()
        for held in list(self.held):
            if held.pause.holding:
                trace = self.outcome.execution(held.label)
                action = self._resume(trace, Step("resume"))
                if action:
                    self._moment(f"(end) {action}", before)
                    return action
        for gate in self.observer.held_gates():
            trace = self.outcome.execution(gate.subject.label)
            action = self._resume(trace, Step("resume"))
            if action:
                self._moment(f"(end) {action}", before)
                return action
        action = self._release_helpers()
        if action:
            self._moment(f"(end) {action}", before)
        return action

    def _let_everything_go(self) -> None:
        """After a failure of the engine: nothing stays held for the next schedule."""
        for held in self.held:
            held.pause.release()
        for pause in self.helper_pauses:
            pause.release()
        for gate in self.observer.gates:
            gate.opened.set()
        self.cloud.faults.withdraw(*[h.pause for h in self.held], *self.helper_pauses)

    def _final(self, trace: ExecutionTrace) -> None:
        result = self.cloud.snapshot(trace.arn, with_history=False)
        trace.status, trace.error = result.status, result.error
        if result.status != "RUNNING" and trace.ended_in_epoch is None:  # its end, first seen here
            trace.ended_in_epoch = self.epoch
        trace.output = result.output if result.status == "SUCCEEDED" else None

    # -- the timeline ------------------------------------------------------------------------------
    def _moment(self, action: str, before: list[dict[str, Any]]) -> None:
        states: dict[str, list[str]] = {}
        statuses: dict[str, str] = {}
        labelled = [(e.label, e.arn) for e in self.outcome.executions] + [
            (self._helper_label(arn), arn) for arn in self._new_helper_executions()
        ]
        for label, arn in labelled:
            entered = self.cloud.states_so_far(arn)
            seen = self._states_seen.get(arn, 0)
            if len(entered) > seen:
                states[label] = entered[seen:]
                self._states_seen[arn] = len(entered)
            status = self.cloud.status_of(arn)
            trace = next((e for e in self.outcome.executions if e.arn == arn), None)
            if trace is not None and status != trace.status:
                trace.status = status
                trace.ended_in_epoch = None if status == "RUNNING" else self.epoch
                if status == "FAILED":
                    self._look_for_a_claim_left(trace)
                statuses[label] = self._status_text(arn, status)
            elif trace is None and status != "RUNNING" and label not in self.helper_labels.values():
                statuses[label] = status
        for pause in self.helper_pauses:
            if pause.holding and pause.execution_arn:
                statuses[self._helper_label(pause.execution_arn)] = f"held before {pause.state_name}"
        for held in self.held:
            if held.pause.holding:
                statuses[held.label] = f"held before {held.pause.state_name}"
        for gate in self.observer.held_gates():
            held_there = self.observer.still_awaited(gate)
            where = "held inside" if held_there else "its abandoned call still runs in"
            statuses.setdefault(gate.subject.label, f"{where} {gate.function}")
        self.outcome.timeline.append(
            Moment(
                len(self.outcome.timeline) + 1,
                action,
                states,
                statuses,
                self.observer.take_events(),
                before,
                self._records(),
            )
        )

    def _look_for_a_claim_left(self, trace: ExecutionTrace) -> None:
        """An execution that failed (no stop, no time-out) must release its own claim itself: the
        release workflow is a best-effort backstop for what a Catch cannot see."""
        claims = [
            r for r in self._records() if _leased(r) and str(r.get("owner", "")).startswith(f"{trace.arn}#")
        ]
        if claims:
            self.outcome.claims_left.append(trace.label)

    def _status_text(self, arn: str, status: str) -> str:
        if status != "FAILED":
            return status
        return f"FAILED {self.cloud.snapshot(arn, with_history=False).error}"

    def _new_helper_executions(self) -> list[str]:
        found = []
        for machine in self.helpers:
            for arn in self.cloud.executions(machine):
                if arn not in self._known_helpers[machine]:
                    found.append(arn)
        return found

    def _helper_label(self, arn: str) -> str:
        if arn not in self.helper_labels:
            machine = arn.split(":")[6] if arn.count(":") >= 6 else "helper"
            self.helper_labels[arn] = f"{machine} #{len(self.helper_labels) + 1}"
        return self.helper_labels[arn]

    # -- what the records and executions say --------------------------------------------------------
    def _execution(self, index: int) -> ExecutionTrace | None:
        targets = [e for e in self.outcome.executions if not e.probe]
        return targets[index % len(targets)] if targets else None

    def _observer(self, watched: frozenset[str]) -> CallObserver:
        return CallObserver(
            RunContext(
                origin=self._origin,
                history_length=self._history_length,
                is_running=self._is_running,
                entry_facts=self._entry_facts,
                watched=watched,
            )
        )

    def _origin(self) -> Subject | None:
        """The target execution whose Task makes the call this thread is making."""
        arn = call_origins.calling_execution()
        parts = arn.split(":")
        name = parts[_NAME_IN_ARN] if len(parts) > _NAME_IN_ARN else ""
        trace = next((e for e in self.outcome.executions if e.name == name), None)
        delivered = self._delivered
        if trace is None and delivered is not None and name and parts[_NAME_IN_ARN - 1] == self.machine_name:
            trace = self._bind(delivered, arn)  # the one execution a delivery is starting now
        return None if trace is None else Subject(trace.label, arn)

    def _bind(self, trace: ExecutionTrace, arn: str) -> ExecutionTrace:
        trace.arn, trace.name = arn, arn.split(":")[_NAME_IN_ARN]
        self._delivered = None
        return trace

    def _is_running(self, arn: str) -> bool:
        return not arn or self.cloud.status_of(arn) == "RUNNING"

    def _history_length(self, arn: str) -> int:
        return self.cloud.history_length(arn) if arn else 0

    def _position(self, trace: ExecutionTrace) -> str:
        held = next((h for h in self.held if h.label == trace.label and h.pause.holding), None)
        if held is not None:
            return f"before {held.pause.state_name}"
        gate = next((g for g in self.observer.held_gates() if g.subject.label == trace.label), None)
        if gate is not None:
            return f"inside {gate.function}"
        states = self.cloud.states_so_far(trace.arn)
        return f"in {states[-1]}" if states else "at its start"

    def _entry_facts(self) -> tuple[int, int | None, bool, int]:
        """As a watched call begins: the clock, the lease of a claim that stands, whether a
        COMPLETED record stands, and the epoch."""
        now_ms = self.cloud.clock.now_ms()
        records = self._records()
        leases = [int(r["in_progress_expiration"]) for r in records if _leased(r)]
        leases = [end for end in leases if end > now_ms]
        completed = any(
            r.get("status") == "COMPLETED" and int(r.get("expiration", 0)) * 1000 > now_ms for r in records
        )
        return now_ms, max(leases) if leases else None, completed, self.epoch

    def _records(self) -> list[dict[str, Any]]:
        return [_shown(item) for name in self.tables for item in self._scan(name)]

    def _scan(self, table: str) -> list[dict[str, Any]]:
        return self.cloud.items(table)

    def _all_tables(self) -> list[str]:
        return list(self.cloud.dynamodb.list_tables()["TableNames"])

    def restore_tables(self) -> None:
        """Every schedule starts from the tables as they were when the exploration began."""
        for table, items in self._snapshot.items():
            self.cloud.restore_items(table, items)


def _leased(record: dict[str, Any]) -> bool:
    return record.get("status") == "INPROGRESS" and "in_progress_expiration" in record


def _shown(item: dict[str, Any]) -> dict[str, Any]:
    """A record as the timeline shows it: plain values, its result as JSON text."""
    return {name: _number(value) for name, value in plain(item).items()}


def _number(value: Any) -> Any:
    """DynamoDB numbers come back as Decimal: whole ones as int, for JSON and for reading."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def _start_at(cloud: Any, machine: str) -> str:
    definition = json.loads(cloud.sfn.describe_state_machine(stateMachineArn=machine)["definition"])
    return str(definition["StartAt"])
