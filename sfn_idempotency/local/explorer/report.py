"""What an exploration answers: a pass with what it covered, or the shortest counterexample found,
as a timeline (text, JSON, an SVG image) with the token that replays it."""

from __future__ import annotations

import hashlib
import html
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sfn_idempotency.local.explorer.outcome import Finding, Moment, ScheduleOutcome


class ExactlyOnceViolation(AssertionError):
    """The explorer found a schedule that breaks exactly-once (``report.counterexample``)."""

    def __init__(self, report: Report) -> None:
        super().__init__(report.text())
        self.report = report


@dataclass
class Counterexample:
    """The shortest schedule found that breaks an invariant, and what happened in it."""

    outcome: ScheduleOutcome
    replay: str

    @property
    def violations(self) -> list[Finding]:
        return self.outcome.violations

    @property
    def steps(self) -> int:
        return len(self.outcome.schedule.steps)

    def text(self) -> str:
        lines = [f"Counterexample ({self.steps} steps):"]
        lines += [f"  VIOLATED {v.invariant}: {v.message}" for v in self.violations]
        lines.append("Timeline:")
        labels = {e.arn: e.label for e in self.outcome.executions}
        for moment in self.outcome.timeline:
            lines += _moment_lines(moment, labels)
        lines.append(f"Replay: {self.replay}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "violations": [v.to_json() for v in self.violations],
            "notes": [n.to_json() for n in self.outcome.notes],
            "timeline": [m.to_json() for m in self.outcome.timeline],
            "runs": [r.to_json() for r in self.outcome.runs],
            "replay": self.replay,
        }

    def svg(self) -> str:
        """The timeline as an image: a lane per execution, a column per step."""
        return timeline_svg(self.outcome)


@dataclass
class Report:
    """``passed``, how many ``schedules`` ran in ``seconds`` from ``seed``, what they ``covered``
    (how many schedules exercised each thing), the ``counterexample`` if one was found (with how
    many schedules it took to find), and how many schedules had runs at least once by nature."""

    target: str
    seed: int
    schedules: int
    seconds: float
    covered: Counter[str] = field(default_factory=Counter)
    counterexample: Counterexample | None = None
    schedules_to_find: int | None = None
    at_least_once: int = 0
    example_note: str = ""

    @property
    def passed(self) -> bool:
        return self.counterexample is None

    def assert_exactly_once(self) -> None:
        """Raise ExactlyOnceViolation (an AssertionError: a pytest failure) unless it passed."""
        if not self.passed:
            raise ExactlyOnceViolation(self)

    def text(self) -> str:
        head = (
            f"{self.target}: {'PASSED' if self.passed else 'FAILED'}, {self.schedules} schedules "
            f"in {self.seconds:.1f} s (seed {self.seed})"
        )
        lines = [head]
        if self.counterexample is not None:
            lines.append(f"Found after {self.schedules_to_find} schedules; shrunk to the shortest below.")
            lines.append(self.counterexample.text())
        else:
            lines.append(
                "Covered: " + ", ".join(f"{name} {count}" for name, count in sorted(self.covered.items()))
            )
        if self.at_least_once:
            lines.append(
                f"At least once by nature, in {self.at_least_once} schedules (not violations): {self.example_note}"
            )
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "passed": self.passed,
            "seed": self.seed,
            "schedules": self.schedules,
            "seconds": round(self.seconds, 3),
            "covered": dict(sorted(self.covered.items())),
            "schedules_to_find": self.schedules_to_find,
            "counterexample": None if self.counterexample is None else self.counterexample.to_json(),
            "at_least_once_by_nature": {"schedules": self.at_least_once, "example": self.example_note},
        }


def _moment_lines(moment: Moment, labels: dict[str, str]) -> list[str]:
    lines = [f"{moment.step:>2}. {moment.action}"]
    for label in sorted(set(moment.states) | set(moment.statuses)):
        states = " > ".join(moment.states.get(label, []))
        status = moment.statuses.get(label, "")
        lines.append(f"      {label}: {states}{' | ' if states and status else ''}{status}")
    lines += [f"      call: {call}" for call in moment.calls]
    if moment.records_after != moment.records_before:
        before, after = _records(moment.records_before, labels), _records(moment.records_after, labels)
        lines.append(f"      records: {before} -> {after}")
    return lines


def _records(records: list[dict[str, Any]], labels: dict[str, str]) -> str:
    if not records:
        return "none"
    return "; ".join(_record(r, labels) for r in records)


def _record(record: dict[str, Any], labels: dict[str, str]) -> str:
    """``STATUS by <label>``, and a short digest of the stored result (which run's answer it is)."""
    text = str(record.get("status", "?"))
    owner = str(record.get("owner", ""))
    if owner:
        execution = owner.split("#")[0]
        text += f" by {labels.get(execution, execution.rsplit(':', 1)[-1])}"
    if "data" in record:
        text += f" (result {hashlib.sha256(str(record['data']).encode()).hexdigest()[:6]})"
    return text


# -- the image ---------------------------------------------------------------------------------
_COLUMN, _LEFT, _LINE, _CHARACTER = 210, 130, 14, 6.2  # pixels
_COLOURS = {"SUCCEEDED": "#2e7d32", "FAILED": "#c62828", "ABORTED": "#6d4c41", "TIMED_OUT": "#ef6c00"}
_RUNNING = "#1565c0"
_CELL_LINES = 4


def timeline_svg(outcome: ScheduleOutcome) -> str:
    """A column per step (its action on top), a lane per execution (the states it entered and its
    status), and below them the step's calls and records; the violations at the foot."""
    moments = outcome.timeline
    labels: list[str] = []
    for moment in moments:
        for label in [*moment.states, *moment.statuses]:
            if label not in labels:
                labels.append(label)
    executions = {e.arn: e.label for e in outcome.executions}
    heads = [_wrapped(f"{m.step}. {m.action}", _COLUMN - 10)[:3] for m in moments]
    notes = [
        _wrapped("; ".join(m.calls), _COLUMN - 10)[:4]
        + (
            _wrapped(
                f"records: {_records(m.records_before, executions)} -> {_records(m.records_after, executions)}",
                _COLUMN - 10,
            )[:3]
            if m.records_after != m.records_before
            else []
        )
        for m in moments
    ]
    top = _LINE * (max((len(h) for h in heads), default=1) + 1) + 8
    lane = _LINE * _CELL_LINES + 12
    foot = top + lane * len(labels)
    notes_height = _LINE * max((len(n) for n in notes), default=0) + 12
    width = _LEFT + _COLUMN * len(moments) + 10
    height = foot + notes_height + _LINE * (len(outcome.violations) + 1) + 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    for row, label in enumerate(labels):
        parts.append(_text(6, top + lane * row + _LINE, label, _LEFT - 10, bold=True))
    for index, moment in enumerate(moments):
        x = _LEFT + _COLUMN * index
        parts.append(f'<line x1="{x}" y1="4" x2="{x}" y2="{foot + notes_height}" stroke="#ddd"/>')
        parts += [
            _text(x + 5, _LINE * (n + 1), line, _COLUMN - 10, bold=True)
            for n, line in enumerate(heads[index])
        ]
        for row, label in enumerate(labels):
            states, status = moment.states.get(label, []), moment.statuses.get(label, "")
            if states or status:
                parts += _cell(x, top + lane * row, states, status, lane)
        parts += [
            _text(x + 5, foot + _LINE * (n + 1), line, _COLUMN - 10, fill="#555")
            for n, line in enumerate(notes[index])
        ]
    y = foot + notes_height + _LINE
    for violation in outcome.violations:
        parts.append(
            _text(6, y, f"VIOLATED {violation.invariant}: {violation.message}", fill="#c62828", bold=True)
        )
        y += _LINE
    parts.append("</svg>")
    return "\n".join(parts)


def _cell(x: int, y: int, states: list[str], status: str, lane: int) -> list[str]:
    colour = _COLOURS.get(status.split(" ")[0], _RUNNING)
    status_lines = _wrapped(status, _COLUMN - 16)[:2]
    state_lines = _wrapped(" > ".join(states), _COLUMN - 16)
    lines = state_lines[max(0, len(state_lines) - (_CELL_LINES - len(status_lines))) :]
    lines += status_lines
    box = (
        f'<rect x="{x + 3}" y="{y}" width="{_COLUMN - 6}" height="{lane - 6}" rx="4" '
        f'fill="{colour}" fill-opacity="0.1" stroke="{colour}"/>'
    )
    return [box, *(_text(x + 8, y + _LINE * (n + 1), line, _COLUMN - 16) for n, line in enumerate(lines))]


def _wrapped(text: str, width: float) -> list[str]:
    """``text`` in lines that fit ``width`` pixels, broken between words."""
    most = max(8, int(width / _CHARACTER))
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= most:
            lines[-1] += f" {word}"
        else:
            lines.append(word if len(word) <= most else word[: most - 1] + "…")
    return [line for line in lines if line]


def _text(x: float, y: float, text: str, width: float = 0, *, bold: bool = False, fill: str = "#222") -> str:
    if width:
        most = max(4, int(width / _CHARACTER))
        text = text if len(text) <= most else text[: most - 1] + "…"
    weight = ' font-weight="bold"' if bold else ""
    return f'<text x="{x}" y="{y}" fill="{fill}"{weight}>{html.escape(text)}</text>'


def dumps(report: Report) -> str:
    return json.dumps(report.to_json(), indent=2)
