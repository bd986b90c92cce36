"""What a replay tells its caller: the opt-in replay marker and the response hook.

Both rewrite the idempotency flow (either flavour) when the machine is built; with neither, the
flow is untouched and a replay's output is the first run's, byte for byte.

**The marker.** With ``marker`` (a field name, here; see wrap.py for the inline step), every
output of the flow that a record stands behind is an envelope::

    {"result": <the business result, or its replay>,
     "<marker>": {"replayed": false | true,
                  "idempotencyKey": "orders#1f2e…",
                  "completedAt": "2026-12-02T01:30:00.000Z",   (when Complete was entered)
                  "expiresAt": 1796175335,                    (epoch s: the record's expiration)
                  "firstExecution": "arn:aws:states:…:execution:…"}}

so a Choice tests ``$.<marker>.replayed`` (or ``{% $states.input.<marker>.replayed %}``) on every
run, and the marker can never collide with the result. The first run's marker is read back from
the record it wrote (``ReturnValues: ALL_NEW``): no state is added to a first run or a replay. A
record written by Powertools (no owner, no completed_at) replays with those two as null.

**The hook.** ``hook`` rewrites a replay's output from ``$output`` (the stored result) and
``$record`` (the marker's metadata: idempotencyKey, completedAt, expiresAt, firstExecution):

- JSONata flows: an expression, ``"{% $merge([$output, {'replayedAt': $record.completedAt}]) %}"``,
  evaluated inside the Replay state (no state added);
- JSONPath flows: a Parameters-style template over ``$.output`` and ``$.record``, intrinsic
  functions allowed, ``{"order.$": "$.output", "from.$": "$.record.firstExecution"}``, in a Pass
  state of its own (one transition added to each replay).

Both are checked here: a hook that cannot run is refused with the reason, before anything deploys.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from typing import Any

from jsonata import Jsonata  # jsonata-python: the evaluator the local engine runs too

from sfn_idempotency.flow.definitions import RECORD_VARIABLE, DefinitionError

JSONPATH, JSONATA = "JSONPath", "JSONata"
RESULT_FIELD = "result"
MARKER_FIELDS = ("replayed", "idempotencyKey", "completedAt", "expiresAt", "firstExecution")
RECORD_FIELDS = MARKER_FIELDS[1:]
# Read keeps the record it read in this workflow variable (both flavours): never beside the event
# in the state's data, where the two together could pass the 256 KiB a state may carry.
RECORD_ITEM = f"${RECORD_VARIABLE}.Item"
COMPLETE, REPLAY = "Complete", "Replay"
REPLAY_UNTRACKED = "ReplayUntrackedRecord"  # a COMPLETED record without owner or completed_at
REPLAY_HOOK = "ReplayHook"
MARK_REPLAY = "MarkReplay"
REPLAY_STATES = (REPLAY_UNTRACKED, REPLAY_HOOK, MARK_REPLAY)  # the states the options may add
INTRINSIC_FUNCTIONS = frozenset(
    "States." + name
    for name in [
        "Format",
        "StringToJson",
        "JsonToString",
        "Array",
        "ArrayPartition",
        "ArrayContains",
        "ArrayRange",
        "ArrayGetItem",
        "ArrayLength",
        "ArrayUnique",
        "Base64Encode",
        "Base64Decode",
        "Hash",
        "JsonMerge",
        "MathRandom",
        "MathAdd",
        "StringSplit",
        "UUID",
    ]
)
_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_REFERENCE_PATH = re.compile(r"\$(\.[A-Za-z_][A-Za-z0-9_]*)+")
_JSONATA = re.compile(r"\A\{%(.*)%\}\Z", re.DOTALL)
_PATH_IN_EXPRESSION = re.compile(r"\$\$?[\w.\[\]*]*")


class ReplayOptionError(DefinitionError):
    """A replay marker or hook that cannot work; the message says why."""


@dataclass(frozen=True)
class ReplayOptions:
    """``marker``: the envelope's field for the marker (None: no marker). ``hook``: a JSONata
    expression or a JSONPath template (None: the stored result as it is)."""

    marker: str | None = None
    hook: Any = None

    @property
    def active(self) -> bool:
        return self.marker is not None or self.hook is not None


def checked_options(marker: str | None, hook: Any, query_language: str) -> ReplayOptions:
    """The options, or ReplayOptionError naming what is wrong with them."""
    if marker is not None and (not _FIELD_NAME.fullmatch(marker) or marker == RESULT_FIELD):
        raise ReplayOptionError(
            f"replay marker {marker!r} is not a field name of its own (letters, digits, '_', not "
            f"{RESULT_FIELD!r}, where the result goes)"
        )
    if hook is not None:
        check_hook(hook, query_language)
    return ReplayOptions(marker=marker, hook=hook)


def check_hook(hook: Any, query_language: str) -> None:
    if query_language == JSONATA:
        _check_jsonata_hook(hook)
    else:
        _check_template_hook(hook)


def _check_jsonata_hook(hook: Any) -> None:
    match = _JSONATA.match(hook) if isinstance(hook, str) else None
    if match is None:
        raise ReplayOptionError(
            "a JSONata flow's replay hook is one JSONata expression written as '{% ... %}' (it reads "
            "$output and $record)"
        )
    try:
        Jsonata(match[1])
    except Exception as error:  # the library raises its own JException for any syntax error
        raise ReplayOptionError(f"the replay hook is not valid JSONata: {error}") from None


def _check_template_hook(hook: Any, where: str = "the replay hook") -> None:
    if not isinstance(hook, dict):
        raise ReplayOptionError(
            "a JSONPath flow's replay hook is a Parameters-style template (a JSON object: fields "
            "ending in '.$' select from $.output and $.record, or call intrinsic functions)"
        )
    for name, value in hook.items():
        if isinstance(value, dict):
            _check_template_hook(value, f"{where}.{name}")
        elif name.endswith(".$"):
            _check_selection(value, f"{where}.{name}")


def _check_selection(value: Any, where: str) -> None:
    if not isinstance(value, str) or not value.startswith(("$", "States.")):
        raise ReplayOptionError(f"{where}: a '.$' field takes a path or an intrinsic function, got {value!r}")
    if value.startswith("States."):
        for function in re.findall(r"States\.\w+", value):
            if function not in INTRINSIC_FUNCTIONS:
                raise ReplayOptionError(f"{where}: {function} is not an intrinsic function")
        if value.count("(") != value.count(")") or not value.rstrip().endswith(")"):
            raise ReplayOptionError(f"{where}: unbalanced parentheses in {value!r}")
    for path in _PATH_IN_EXPRESSION.findall(value):
        if path.startswith("$$") or path == "$":
            continue
        head, _, rest = path.removeprefix("$.").partition(".")
        if head not in ("output", "record"):
            raise ReplayOptionError(f"{where}: {path!r} reads neither $.output nor $.record")
        field = rest.split(".")[0].split("[")[0]
        if head == "record" and field and field not in RECORD_FIELDS:
            raise ReplayOptionError(f"{where}: $.record has {', '.join(RECORD_FIELDS)}; not {field!r}")


def check_marker_place(task: dict[str, Any], place: str, query_language: str) -> None:
    """An inline step's marker must have a place of its own in the step's output, whatever the
    result is: beside the Task's ResultPath (JSONPath), or beside the fields of its Output (JSONata)."""
    if query_language == JSONATA:
        output = task.get("Output")
        if not _FIELD_NAME.fullmatch(place):
            raise ReplayOptionError(f"a JSONata step's replay marker is a field name, got {place!r}")
        if not isinstance(output, dict):
            raise ReplayOptionError(
                "the replay marker goes beside the fields of the Task's Output: give the Task an "
                "Output that is a JSON object (its result in one field), so that the marker cannot "
                "collide with it"
            )
        if place in output:
            raise ReplayOptionError(
                f"the Task's Output already has a field {place!r}: name the marker another"
            )
        return
    if not _REFERENCE_PATH.fullmatch(place):
        raise ReplayOptionError(
            f"a JSONPath step's replay marker is a reference path like '$.replay', got {place!r}"
        )
    result_path = task.get("ResultPath", "$")
    if result_path == "$":
        raise ReplayOptionError(
            "the Task's result replaces its whole input (no ResultPath): give it a ResultPath, so "
            "that the replay marker has a place beside the result"
        )
    if task.get("OutputPath", "$") != "$":
        raise ReplayOptionError("the replay marker needs the Task's whole output: drop its OutputPath")
    if result_path is not None and (_within(place, str(result_path)) or _within(str(result_path), place)):
        raise ReplayOptionError(f"the replay marker {place!r} overlaps the Task's ResultPath {result_path!r}")


def _within(path: str, other: str) -> bool:
    return path == other or path.startswith(other + ".")


# -- rewriting the flow ----------------------------------------------------------------------------
def replay_options_applied(definition: str, marker: str | None, hook: Any, query_language: str) -> str:
    """The standalone flow's ASL text with the checked marker and hook (the text itself without)."""
    options = checked_options(marker, hook, query_language)
    if not options.active:
        return definition
    return json.dumps(with_replay_options(json.loads(definition), options, query_language), indent=2)


def with_replay_options(flow: dict[str, Any], options: ReplayOptions, query_language: str) -> dict[str, Any]:
    """The flow (an ASL document) with the marker and the hook; unchanged without them."""
    if not options.active:
        return flow
    flow = copy.deepcopy(flow)
    if query_language == JSONATA:
        _jsonata_replay(flow["States"], options)
    else:
        _jsonpath_replay(flow["States"], options)
    return flow


def _jsonpath_replay(states: dict[str, Any], options: ReplayOptions) -> None:
    if options.marker is not None:
        complete = states[COMPLETE]
        complete["Parameters"]["ReturnValues"] = "ALL_NEW"  # the record as written: the marker's source
        complete["ResultSelector"] = {
            f"{RESULT_FIELD}.$": "States.StringToJson($.Attributes.data.S)",
            options.marker: {"replayed": False, **_record_metadata("$.Attributes", tracked=True)},
        }
        complete.pop("ResultPath", None)
        complete.pop("OutputPath", None)
    _route_untracked_records(states)
    replay = states[REPLAY]
    untracked = copy.deepcopy(replay)
    stored = {"output.$": f"States.StringToJson({RECORD_ITEM}.data.S)"}
    for state, tracked in ((replay, True), (untracked, False)):
        metadata = _record_metadata(RECORD_ITEM, tracked=tracked)
        state.pop("OutputPath", None)
        if options.hook is None:  # options.marker is set: the envelope, at once
            state["Parameters"] = {
                f"{RESULT_FIELD}.$": stored["output.$"],
                str(options.marker): {"replayed": True, **metadata},
            }
            continue
        state["Parameters"] = {**stored, "record": metadata}
        state.pop("End", None)
        state["Next"] = REPLAY_HOOK
    states[REPLAY_UNTRACKED] = untracked
    if options.hook is not None:
        hook: dict[str, Any] = {
            "Type": "Pass",
            "Comment": "The user's replay hook.",
            "Parameters": options.hook,
        }
        states[REPLAY_HOOK] = hook
        if options.marker is None:
            hook["End"] = True
        else:
            hook.update({"ResultPath": "$.output", "Next": MARK_REPLAY})
            states[MARK_REPLAY] = {
                "Type": "Pass",
                "Comment": "The replay marker beside the hook's output.",
                "Parameters": {
                    f"{RESULT_FIELD}.$": "$.output",
                    options.marker: {"replayed": True, **{f"{f}.$": f"$.record.{f}" for f in RECORD_FIELDS}},
                },
                "End": True,
            }


def _record_metadata(item: str, *, tracked: bool) -> dict[str, Any]:
    """The marker's metadata from a DynamoDB item at ``item`` (JSONPath): a record without owner
    or completed_at (Powertools', or written before them) has null there."""
    return {
        "idempotencyKey.$": f"{item}.id.S",
        **({"completedAt.$": f"{item}.completed_at.S"} if tracked else {"completedAt": None}),
        "expiresAt.$": f"States.StringToJson({item}.expiration.N)",
        **(
            {"firstExecution.$": f"States.ArrayGetItem(States.StringSplit({item}.owner.S, '#'), 0)"}
            if tracked
            else {"firstExecution": None}
        ),
    }


def _route_untracked_records(states: dict[str, Any]) -> None:
    """Before each RouteByRecord rule that replays, the same rule for a record without the
    metadata, to the replay that has nulls for it (a JSONPath path that is absent fails the state)."""
    rules = states["RouteByRecord"]["Choices"]
    routed = []
    for rule in rules:
        if rule["Next"] == REPLAY:
            condition = {key: value for key, value in rule.items() if key != "Next"}
            missing = {
                "Or": [
                    {"Variable": f"{RECORD_ITEM}.owner.S", "IsPresent": False},
                    {"Variable": f"{RECORD_ITEM}.completed_at.S", "IsPresent": False},
                ]
            }
            routed.append({"And": [condition, missing], "Next": REPLAY_UNTRACKED})
        routed.append(rule)
    states["RouteByRecord"]["Choices"] = routed


def _jsonata_replay(states: dict[str, Any], options: ReplayOptions) -> None:
    record = RECORD_ITEM
    metadata = (
        f"{{'idempotencyKey': {record}.id.S, "
        f"'completedAt': $exists({record}.completed_at.S) ? {record}.completed_at.S : null, "
        f"'expiresAt': $number({record}.expiration.N), "
        f"'firstExecution': $exists({record}.owner.S) ? $substringBefore({record}.owner.S, '#') : null}}"
    )
    output = f"$parse({record}.data.S)"
    if options.hook is not None:
        expression = str(_JSONATA.match(options.hook)[1])  # type: ignore[index]  # checked
        output = f"($output := {output}; $record := {metadata}; ({expression.strip()}))"
    if options.marker is not None:
        marker = f"$merge([{{'replayed': true}}, {metadata}])"
        output = f"{{'{RESULT_FIELD}': {output}, '{options.marker}': {marker}}}"
        first_run = (
            "{'replayed': false, 'idempotencyKey': $sfnIdempotency.key, "
            "'completedAt': $states.context.State.EnteredTime, "
            "'expiresAt': $sfnIdempotency.completedExpiration, "
            "'firstExecution': $states.context.Execution.Id}"
        )
        states[COMPLETE]["Output"] = (
            f"{{% {{'{RESULT_FIELD}': $states.input, '{options.marker}': {first_run}}} %}}"
        )
    states[REPLAY]["Output"] = f"{{% {output} %}}"
