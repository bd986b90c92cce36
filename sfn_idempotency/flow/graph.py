"""A Mermaid state diagram generated from an ASL file (JSONPath Choice rules rendered as labels)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_COMPARISONS = {
    "StringEquals": "==",
    "StringEqualsPath": "==",
    "NumericEquals": "==",
    "NumericLessThanEqualsPath": "<=",
    "NumericLessThanPath": "<",
    "NumericGreaterThan": ">",
    "BooleanEquals": "==",
    "IsPresent": "present ==",
}


def mermaid(asl_path: Path) -> str:
    definition = json.loads(asl_path.read_text(encoding="utf-8"))
    lines = ["stateDiagram-v2", f"    [*] --> {definition['StartAt']}"]
    for name, state in definition["States"].items():
        lines.extend(f"    {name} --> {target}{_label(label)}" for target, label in transitions(state))
        if state["Type"] == "Fail":
            lines.append(
                f"    note right of {name}: {state.get('Error') or 'error from ' + state['ErrorPath']}"
            )
    return "\n".join(lines) + "\n"


def transitions(state: dict[str, Any]) -> list[tuple[str, str]]:
    """(target, label) per arrow out of ``state``; ``[*]`` is the end. The console's graph.mjs draws
    the same arrows (tests/unit/test_console_graph.py holds the two equal)."""
    found = [(choice["Next"], _condition(choice)) for choice in state.get("Choices", [])]
    if "Default" in state:
        found.append((state["Default"], "otherwise"))
    found.extend(
        (catch["Next"], "catch " + ", ".join(catch["ErrorEquals"])) for catch in state.get("Catch", [])
    )
    if "Next" in state:
        found.append((state["Next"], ""))
    if state.get("End") or state["Type"] in ("Succeed", "Fail"):
        found.append(("[*]", ""))
    return found


def _condition(rule: dict[str, Any]) -> str:
    for combinator, joiner in (("And", " and "), ("Or", " or ")):
        if combinator in rule:
            return joiner.join(_condition(inner) for inner in rule[combinator])
    if "Not" in rule:
        return f"not ({_condition(rule['Not'])})"
    if "Condition" in rule:  # JSONata: the expression itself
        return str(rule["Condition"]).removeprefix("{%").removesuffix("%}").strip()
    variable = rule["Variable"].removeprefix("$.")
    for key, operator in _COMPARISONS.items():
        if key in rule:
            value = rule[key]
            shown = value.removeprefix("$.") if key.endswith("Path") else json.dumps(value)
            return f"{variable} {operator} {shown}"
    return str(variable)


def _label(text: str) -> str:
    # Mermaid ends a label at a colon or semicolon of its own; keep the text readable without them.
    return f": {text.replace(':', ' ').replace(';', ',')}" if text else ""
