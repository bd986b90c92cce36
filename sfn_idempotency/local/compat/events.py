"""Step Functions and EventBridge: rules that start executions, status change events, and what
EventBridge delivers (fixes 7, 13, 53, 54, 132; 161 for a rule's Lambda targets).

Fix 132 (speed): a status change event that no rule on its bus can match is not put. Each of the
two events of every execution was built, put, and copied for every rule on the bus, to be matched
and dropped (the example's rules take FAILED, TIMED_OUT and ABORTED events of two machines, and
orders). A rule is passed over only when it cannot take the event: it delivers nothing (fix 7), or
its pattern names the event's source, detail type, status or state machine among plain strings
that leave it out (filters EventBridge ANDs); every other rule still gets the event, through
PutEvents, as before. PutEvents with no rule to deliver to has nothing to show.
"""

from __future__ import annotations

import copy
import datetime
import json
import logging
from collections.abc import Callable
from typing import Any

from sfn_idempotency.local.compat.answers import epoch_ms, with_output_text
from sfn_idempotency.local.compat.lambda_runtime import invoke_asynchronously
from sfn_idempotency.local.compat.patching import Patch, keep
from sfn_idempotency.local.compat.redrive_fields import (
    REDRIVABLE_STATUSES,
    not_redrivable_because,
    redrive_count,
    redrive_date,
)

_EVENTS_MODULE = "moto.events.models"
_EXECUTION_MODULE = "moto.stepfunctions.parser.backend.execution"
_STATUS_CHANGE = "Step Functions Execution Status Change"
# Input and output together stay under this in a status change event (an event carries 256 KiB at
# most; the Step Functions developer guide's EventBridge page names 248 KiB for the data).
MAX_STATUS_EVENT_DATA_BYTES = 248 * 1024
LOG = logging.getLogger(__name__)
# On an execution started through an alias: the alias's ARN (the versions capability sets it).
ALIAS_ARN = "_sfn_local_alias_arn"


def _emit_when_started(original: Callable[[Any], None]) -> Callable[[Any], None]:
    def start(self: Any) -> None:
        # Sent before the worker runs, so RUNNING precedes the terminal event as on AWS.
        _emit_status_change(self, status="RUNNING")
        original(self)

    return start


def _emit_when_ended(original: Callable[[Any], None]) -> Callable[[Any], None]:
    def terminated(self: Any) -> None:
        original(self)
        _emit_status_change(self.execution, status=None)

    return terminated


def _emit_status_change(execution: Any, status: str | None) -> None:
    """The status change event of a Standard workflow's execution, on its default event bus."""
    from moto.events.models import events_backends

    # moto keeps the workflow type on the state machine's `type` (its `sm_type` is always STANDARD).
    if getattr(execution.state_machine, "type", None) != "STANDARD":  # TestState runs have none
        return
    description = with_output_text(execution, execution.to_describe_output())
    now = status or str(getattr(description["status"], "value", description["status"]))
    detail = status_change_detail(description, now, _versions_and_redrive(execution, now))
    events = events_backends[execution.account_id][execution.region_name]
    rules = getattr(events.event_buses.get("default"), "rules", {})
    if not any(_may_take(rule, detail) for rule in rules.values()):
        return  # fix 132
    entry = {
        "Source": "aws.states",
        "DetailType": _STATUS_CHANGE,
        "Detail": json.dumps(detail),
        "Resources": [execution.exec_arn],
        "EventBusName": "default",
    }
    # Straight to the bus: PutEvents refuses the aws.* sources that only AWS services may send.
    events.put_events([entry])


def _may_take(rule: Any, detail: dict[str, Any]) -> bool:
    """False when ``rule`` cannot take a status change event with this ``detail`` (fix 132)."""
    if rule.state != "ENABLED" or not rule.event_pattern.dump():
        return False  # fix 7: it delivers no event
    pattern = rule.event_pattern.get_pattern()
    inner = pattern.get("detail")
    inner = inner if isinstance(inner, dict) else {}
    return not (
        _leaves_out(pattern.get("source"), "aws.states")
        or _leaves_out(pattern.get("detail-type"), _STATUS_CHANGE)
        or _leaves_out(inner.get("status"), detail["status"])
        or _leaves_out(inner.get("stateMachineArn"), detail["stateMachineArn"])
    )


def _leaves_out(filters: Any, value: str) -> bool:
    """A pattern's list of plain strings (no prefix, anything-but or other filter) without ``value``:
    no event whose field is ``value`` matches the pattern."""
    return isinstance(filters, list) and all(isinstance(f, str) for f in filters) and value not in filters


def _versions_and_redrive(execution: Any, status: str) -> dict[str, Any]:
    """What the event says of the version and alias the execution ran, and of its redrive, each
    null where it has none (recorded: ``test_event_bridge_events_base``)."""
    machine = execution.state_machine
    source = getattr(machine, "source_arn", None)  # a version's: the machine it is a version of
    redrivable = status in REDRIVABLE_STATUSES
    reason = (
        not_redrivable_because(execution) if redrivable else f"Execution is {status} and cannot be redriven"
    )
    redriven = redrive_date(execution)
    return {
        **({"stateMachineArn": source} if source is not None else {}),
        "stateMachineVersionArn": machine.arn if source is not None else None,
        "stateMachineAliasArn": getattr(execution, ALIAS_ARN, None),
        "redriveCount": redrive_count(execution),
        "redriveDate": epoch_ms(redriven) if redriven is not None else None,
        "redriveStatus": "REDRIVABLE" if reason is None else "NOT_REDRIVABLE",
        "redriveStatusReason": reason,
    }


def status_change_detail(
    description: dict[str, Any], status: str | None = None, facts: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The ``detail`` of a status change event from a DescribeExecution output: dates in epoch
    milliseconds, input and output left out (with ``included: false``) once they pass the limit,
    and the execution's ``facts`` (its version, alias and redrive) after its output, as recorded."""
    execution_input: str | None = description.get("input")
    output: str | None = description.get("output")
    input_size = len(execution_input.encode()) if execution_input is not None else 0
    input_fits = execution_input is not None and input_size <= MAX_STATUS_EVENT_DATA_BYTES
    room = MAX_STATUS_EVENT_DATA_BYTES - (input_size if input_fits else 0)
    output_fits = output is not None and len(output.encode()) <= room
    return {
        "executionArn": description["executionArn"],
        "stateMachineArn": (facts or {}).get("stateMachineArn", description["stateMachineArn"]),
        "name": description["name"],
        "status": status or str(getattr(description["status"], "value", description["status"])),
        "startDate": epoch_ms(description.get("startDate")),
        "stopDate": None if status == "RUNNING" else epoch_ms(description.get("stopDate")),
        "input": execution_input if input_fits else None,
        "output": output if output_fits else None,
        **{name: value for name, value in (facts or {}).items() if name != "stateMachineArn"},
        "inputDetails": {"included": input_fits},
        "outputDetails": {"included": output_fits} if output is not None else None,
        "error": description.get("error"),
        "cause": description.get("cause"),
    }


def _deliver_to_state_machines(original: Callable[..., None]) -> Callable[..., None]:
    from moto.stepfunctions.responses import get_backend
    from moto.utilities.arns import parse_arn

    def is_state_machine(target: dict[str, Any]) -> bool:
        arn = parse_arn(target["Arn"])
        return (arn.service, arn.resource_type) == ("states", "stateMachine")

    def is_function(target: dict[str, Any]) -> bool:
        return bool(parse_arn(target["Arn"]).service == "lambda")

    def send_to_targets(self: Any, event: dict[str, Any], transform_input: bool = True) -> None:
        if self.state != "ENABLED":
            return  # a DISABLED rule delivers nothing, to any target (moto delivered anyway)
        if not self.event_pattern.dump():
            return  # a rule with no pattern runs on its schedule only; moto matched every event to it
        others = [
            target for target in self.targets if not is_state_machine(target) and not is_function(target)
        ]
        if others:
            # moto raises NotImplementedError on a target kind it does not know: hand it only its own.
            rule = copy.copy(self)
            rule.targets = others
            original(rule, event, transform_input)
        if not self.event_pattern.matches_event(event):
            return
        for target in filter(is_state_machine, self.targets):
            arn = parse_arn(target["Arn"])
            try:
                get_backend(arn.account, arn.region).start_execution(
                    target["Arn"], None, _target_input(target, event)
                )
            except Exception as error:  # the sender's PutEvents succeeded all the same, as on AWS
                LOG.warning("EventBridge could not start %s (%s): the event is dropped", target["Arn"], error)
        for target in filter(is_function, self.targets):
            # fix 161: moto has no Lambda target (NotImplementedError failed the whole PutEvents)
            invoke_asynchronously(
                target["Arn"], _target_input(target, event), f"EventBridge rule {self.name}"
            )

    return send_to_targets


def _target_input(target: dict[str, Any], event: dict[str, Any]) -> str:
    """What EventBridge sends the target: its constant Input, the part of the event its InputPath
    selects, its InputTransformer's output, or the event."""
    from moto.events.utils import EventTemplateParser
    from moto.utilities.arns import parse_arn

    if "Input" in target:
        return str(target["Input"])
    transformer = target.get("InputTransformer")
    if transformer is None:
        delivered = _as_delivered(event, parse_arn(target["Arn"]).account)
        if "InputPath" in target:
            from jsonpath_ng.parser import parse

            found = [match.value for match in parse(target["InputPath"]).find(delivered)]
            return json.dumps(found[0] if found else None)
        return json.dumps(delivered)
    delivered = EventTemplateParser.parse(
        input_template=transformer.get("InputTemplate"),
        input_paths_map=transformer.get("InputPathsMap", {}),
        event=event,
    )
    return delivered if isinstance(delivered, str) else json.dumps(delivered)


def _as_delivered(event: dict[str, Any], account: str) -> dict[str, Any]:
    """The envelope as EventBridge delivers it: every field, ``time`` as ISO 8601 UTC."""
    moment = event.get("time")
    if isinstance(moment, int | float):
        moment = datetime.datetime.fromtimestamp(moment, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    envelope = {
        "version": "0",
        "id": event.get("id"),
        "detail-type": event.get("detail-type"),
        "source": event.get("source"),
    }
    envelope.update({"account": event.get("account", account), "time": moment, "region": event.get("region")})
    envelope.update({"resources": event.get("resources", []), "detail": event.get("detail", {})})
    return envelope


def _envelope_names_the_account(original: str) -> str:
    """Fix 53: an event delivered without an input transformer (to a queue, a log group) carries
    its ``account``, as every envelope does (recorded: test_events_task_service); moto's default
    template left it out."""
    return original.replace('"source": "<source>", ', '"source": "<source>", "account": "<account>", ', 1)


def _detail_must_be_an_object(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 54: PutEvents answers ``MalformedDetail`` for an entry whose Detail is JSON but not an
    object (recorded: test_put_events_malformed_detail); moto warned, then failed the whole call
    (HTTP 500) while matching rules. Entries are answered in order, each on its own."""

    def put_events(self: Any, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        answers: list[dict[str, Any]] = []
        for event in events:
            if _detail_is_not_an_object(event.get("Detail")):
                answers.append({"ErrorCode": "MalformedDetail", "ErrorMessage": "Detail is malformed."})
            else:
                answers.extend(original(self, [event]))
        return answers

    return put_events


def _detail_is_not_an_object(detail: Any) -> bool:
    if not isinstance(detail, str) or not detail:
        return False  # a missing Detail is moto's own refusal
    try:
        return not isinstance(json.loads(detail), dict)
    except ValueError:
        return False  # moto answers MalformedDetail itself


PATCHES: tuple[Patch, ...] = (
    Patch(7, f"{_EVENTS_MODULE}:Rule", "send_to_targets", _deliver_to_state_machines),
    Patch(7, _EVENTS_MODULE, "events_backends", keep),
    Patch(7, "moto.events.utils", "EventTemplateParser", keep),
    Patch(13, f"{_EXECUTION_MODULE}:Execution", "start", _emit_when_started),
    Patch(13, f"{_EXECUTION_MODULE}:BaseExecutionWorkerCommunication", "terminated", _emit_when_ended),
    Patch(
        53,
        "moto.events.utils:EventTemplateParser",
        "DEFAULT_EVENT_INPUT_TEMPLATE",
        _envelope_names_the_account,
    ),
    Patch(54, f"{_EVENTS_MODULE}:EventsBackend", "put_events", _detail_must_be_an_object),
)
