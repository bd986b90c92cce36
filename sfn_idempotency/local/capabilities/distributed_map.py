"""Distributed Map states as AWS runs them (fixes 49 to 51, 60, 88, 107).

49. ``ItemBatcher``: moto's grammar has no such field, so a definition with one was refused (and
    it took a whole-number ``ToleratedFailurePercentage`` for a syntax error). The
    field is taken out before moto parses the definition and kept with the Map's map-run component;
    a map run then groups the items (each selected by ``ItemSelector`` first) into batches of at
    most ``MaxItemsPerBatch`` items and ``MaxInputBytesPerBatch`` bytes, each child's input being
    ``{"BatchInput": …, "Items": […]}`` (recorded). The limits and ``BatchInput`` are evaluated by
    moto's own evaluators: a Pass state's ``Parameters`` (JSONPath) or ``Output`` (JSONata) built
    from them, in the Map state's input and variables.
50. Tolerated failures: moto's map runs succeeded whatever their children did, each failed child's
    output ``null``. A map run now fails with ``States.ExceedToleratedFailureThreshold`` when more
    children failed than ``ToleratedFailureCount`` or ``ToleratedFailurePercentage`` allow (none
    when neither is set).
51. ``UpdateMapRun`` acts on a running map run: a higher ``maxConcurrency`` starts more children at
    once, new tolerances judge the run (moto recorded the values and changed nothing).
60. ``ItemReader`` reads JSON Lines (``InputType: JSONL``, one item a line) and S3 inventory
    manifests (``MANIFEST``: every object the manifest's CSV files list, one item each, named by
    the manifest's ``fileSchema``); moto knew CSV and JSON only and refused the definition.
107. An ``ItemReader`` whose S3 call fails fails the Map with ``States.ItemReaderFailed`` (as
    documented: the Map "couldn't read from the item source"), the cause S3's answer as the SDK
    for Java words it (moto failed it as ``States.Runtime`` with botocore's text); a listing of
    objects reads every page, and an empty one is no items (moto failed on its missing
    ``Contents`` with Python's ``KeyError`` text).
88. ``ProcessorConfig``'s ``"ExecutionType": "EXPRESS"`` is accepted (AWS's documented default for
    a Distributed Map's children is STANDARD, and EXPRESS is the other documented value; moto's
    grammar knew only STANDARD). The children run as the engine runs every map run's children; the
    value is rewritten in place in the definition's text, so moto's parse errors keep their lines.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sfn_idempotency.local.compat.patching import Patch

_PARSER = "moto.stepfunctions.parser.asl.parse.asl_parser:AmazonStateLanguageParser"
_ITERATION = (
    "moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration."
    "distributed_iteration_component:DistributedIterationComponent"
)
_MAP_RUN_RECORD = (
    "moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor."
    "map_run_record:MapRunRecord"
)
_MAP_SETTINGS = "_sfn_local_map_settings"
_MAP_RUN_WORKERS = "_sfn_local_workers"
_UPDATED_TOLERANCES = "_sfn_local_tolerates"  # the tolerances UpdateMapRun set
DEFAULT_MAX_INPUT_BYTES_PER_BATCH = 256 * 1024  # the child input's quota
THRESHOLD_EXCEEDED_CAUSE = "The specified tolerated failure threshold was exceeded"
# The one value of ProcessorConfig's ExecutionType moto's grammar lacks, written as moto reads it; the
# key appears nowhere else in the States Language.
_EXPRESS_EXECUTION_TYPE = re.compile(r'("ExecutionType"\s*:\s*)"EXPRESS"')
_TOLERANCE_FIELDS = {
    "count": ("ToleratedFailureCount", "ToleratedFailureCountPath"),
    "percentage": ("ToleratedFailurePercentage", "ToleratedFailurePercentagePath"),
}


@dataclass
class MapSettings:
    """What moto's parse of one Map state leaves out: its batcher and which tolerances it sets."""

    batcher: dict[str, Any] | None = None
    jsonata: bool = False
    tolerates: set[str] = field(default_factory=set)
    _limits: Any = None  # the parsed Pass state's template that evaluates the batcher's fields

    def limits_component(self) -> Any:
        if self._limits is None:
            self._limits = _template_component(self.batcher or {}, self.jsonata)
        return self._limits


# -- parsing -----------------------------------------------------------------------------------


def _map_states(scope: dict[str, Any], language: str) -> Iterator[tuple[str, dict[str, Any], str]]:
    """(name, state, query language) of every Map state, nested ones included."""
    language = scope.get("QueryLanguage", language)
    for name, state in (scope.get("States") or {}).items():
        if not isinstance(state, dict):
            continue
        state_language = state.get("QueryLanguage", language)
        if state.get("Type") == "Map":
            yield name, state, state_language
        for inner in [*(state.get("Branches") or []), state.get("ItemProcessor"), state.get("Iterator")]:
            if isinstance(inner, dict):
                yield from _map_states(inner, state_language)


def _settings_taken_out(definition: str) -> tuple[str, dict[str, MapSettings]]:
    """The definition without its ``ItemBatcher`` fields, and each Map state's settings."""
    if "Map" not in definition:
        return definition, {}
    try:
        document = json.loads(definition)
    except ValueError:
        return definition, {}  # moto's parser words the refusal
    if not isinstance(document, dict):
        return definition, {}
    settings: dict[str, MapSettings] = {}
    rewritten = False
    for name, state, language in _map_states(document, "JSONPath"):
        tolerates = {kind for kind, names in _TOLERANCE_FIELDS.items() if any(n in state for n in names)}
        percentage = state.get("ToleratedFailurePercentage")
        if isinstance(percentage, int) and not isinstance(percentage, bool):  # the grammar wants a decimal
            state["ToleratedFailurePercentage"] = float(percentage)
            rewritten = True
        batcher = state.pop("ItemBatcher", None)
        settings[name] = MapSettings(batcher, language == "JSONata", tolerates)
    rewritten = rewritten or any(s.batcher is not None for s in settings.values())
    return (json.dumps(document) if rewritten else definition), settings


def _parsed_with_map_settings(original: Callable[[str], Any]) -> Any:
    def parse(definition: str) -> Any:
        stripped, settings = _settings_taken_out(_EXPRESS_EXECUTION_TYPE.sub(r'\1"STANDARD"', definition))
        program, tree = original(stripped)
        if settings:
            for state in _components(program):
                if type(state).__name__ == "StateMap" and state.name in settings:
                    setattr(state.iteration_component, _MAP_SETTINGS, settings[state.name])
        return program, tree

    return staticmethod(parse)


def _components(root: Any) -> Iterator[Any]:
    """Every component of a parsed program (each once), depth first."""
    from moto.stepfunctions.parser.asl.component.component import Component

    seen: set[int] = set()
    pending = [root]
    while pending:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, Component):
            yield item
            pending.extend(vars(item).values())
        elif isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)


def _template_component(batcher: dict[str, Any], jsonata: bool) -> Any:
    """A Pass state's Parameters (JSONPath) or Output (JSONata) that evaluates the batcher's limits
    and BatchInput, parsed by moto's own parser."""
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    template: dict[str, Any] = {}
    for name in ("MaxItemsPerBatch", "MaxInputBytesPerBatch", "BatchInput"):
        if name in batcher:
            template[name] = batcher[name]
        if f"{name}Path" in batcher:
            template[f"{name}.$"] = batcher[f"{name}Path"]
    state: dict[str, Any] = {"Type": "Pass", "End": True}
    if jsonata:
        state.update(QueryLanguage="JSONata", Output=template)
    else:
        state["Parameters"] = template
    program = AmazonStateLanguageParser.parse(json.dumps({"StartAt": "Limits", "States": {"Limits": state}}))[
        0
    ]
    limits = program.states.states["Limits"]
    # The value the template stands for: Output's is the template's own value (Output itself
    # makes it the state's next input); Parameters leave theirs on the stack.
    return limits.output.jsonata_template_value if jsonata else limits.parameters


# -- running -------------------------------------------------------------------------------------


def _evaluated(env: Any, component: Any, state_input: Any, item: tuple[int, Any] | None = None) -> Any:
    """``component``'s value in a frame of ``env`` whose input is ``state_input``; with ``item``
    (index, value), as a Map's ItemSelector sees ``$$.Map.Item``, as moto's worker selects one."""
    from moto.stepfunctions.parser.asl.eval.states import ItemData, MapData

    frame = env.open_frame()
    try:
        if item is not None:
            frame.states.context_object.context_object_data["Map"] = MapData(
                Item=ItemData(Index=item[0], Value=item[1])
            )
        frame.states.reset(input_value=state_input)
        frame.stack.append(state_input)  # what a JSONPath applies to
        component.eval(frame)
        return frame.stack.pop()
    finally:
        env.close_frame(frame)


def batches(
    items: list[Any], max_items: int | None, max_bytes: int, batch_input: Any
) -> list[dict[str, Any]]:
    """The items in order, grouped: at most ``max_items`` a batch, and at most ``max_bytes`` of
    child input (an item larger than that alone is a batch of its own)."""
    head = {} if batch_input is None else {"BatchInput": batch_input}
    grouped: list[dict[str, Any]] = []
    current: list[Any] = []
    for item in items:
        candidate = {**head, "Items": [*current, item]}
        too_many = max_items is not None and len(current) >= max_items
        too_big = len(json.dumps(candidate, separators=(",", ":")).encode()) > max_bytes
        if current and (too_many or too_big):
            grouped.append({**head, "Items": current})
            current = []
        current.append(item)
    if current:
        grouped.append({**head, "Items": current})
    return grouped


def _batched(env: Any, eval_input: Any, settings: MapSettings) -> None:
    """Replace the map run's items (on top of the stack) by their batches."""
    items = env.stack.pop()
    map_input = env.stack[-1] if env.stack else env.states.get_input()
    if eval_input.item_selector or eval_input.parameters:
        selector = eval_input.item_selector or eval_input.parameters  # Parameters: the legacy name
        items = [_evaluated(env, selector, map_input, (i, item)) for i, item in enumerate(items)]
        eval_input.item_selector = eval_input.parameters = None  # the batch is not selected again
    limits = _evaluated(env, settings.limits_component(), map_input)
    max_items = limits.get("MaxItemsPerBatch")
    max_bytes = limits.get("MaxInputBytesPerBatch")
    env.stack.append(
        batches(
            items,
            None if max_items is None else int(max_items),
            DEFAULT_MAX_INPUT_BYTES_PER_BATCH if max_bytes is None else int(max_bytes),
            limits.get("BatchInput"),
        )
    )


def _threshold_exceeded(record: Any, tolerates: set[str], children: int) -> bool:
    failed = record.item_counter.failed.get() + record.item_counter.timed_out.get()
    if failed == 0:
        return False
    limits = []
    if "count" in tolerates:
        limits.append(failed > int(record.tolerated_failure_count))
    if "percentage" in tolerates:
        limits.append(100.0 * failed / max(children, 1) > float(record.tolerated_failure_percentage))
    return any(limits) if limits else True


def _map_run_failure(env: Any, error_type: str, event_type: str, details_key: str, cause: str) -> Exception:
    """The failure a map run raises: error ``StatesErrorNameType.<error_type>`` with ``cause``, in
    an event of ``event_type`` whose details are under ``details_key``."""
    from moto.stepfunctions.parser.api import HistoryEventType
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )

    error_name = StatesErrorName(typ=getattr(StatesErrorNameType, error_type))
    failure: Exception = FailureEventException(
        failure_event=FailureEvent(
            env=env,
            error_name=error_name,
            event_type=getattr(HistoryEventType, event_type),
            event_details={details_key: {"error": error_name.error_name, "cause": cause}},
        )
    )
    return failure


def _batched_and_judged(original: Callable[[Any, Any, Any], None]) -> Callable[[Any, Any, Any], None]:
    def map_run(self: Any, env: Any, eval_input: Any) -> None:
        settings: MapSettings = getattr(self, _MAP_SETTINGS, None) or MapSettings()
        if settings.batcher is not None:
            _batched(env, eval_input, settings)
        children = len(env.stack[-1])
        original(self, env, eval_input)
        record = eval_input.map_run_record
        if _threshold_exceeded(
            record, settings.tolerates | getattr(record, _UPDATED_TOLERANCES, set()), children
        ):
            env.stack.pop()
            raise _map_run_failure(
                env,
                "StatesExceedToleratedFailureThreshold",
                "MapRunFailed",
                "evaluationFailedEventDetails",
                THRESHOLD_EXCEEDED_CAUSE,
            )

    return map_run


@dataclass
class _Workers:
    """A running map run's workers: how to start one more, and how many there are."""

    start: Callable[[], None]
    job_pool: Any
    launched: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _workers_remembered(original: Callable[..., None]) -> Callable[..., None]:
    def launch_worker(self: Any, env: Any, eval_input: Any, job_pool: Any) -> None:
        record = eval_input.map_run_record
        workers = getattr(record, _MAP_RUN_WORKERS, None)
        if workers is None or workers.job_pool is not job_pool:
            workers = _Workers(start=lambda: original(self, env, eval_input, job_pool), job_pool=job_pool)
            setattr(record, _MAP_RUN_WORKERS, workers)
        with workers.lock:
            workers.launched += 1
        original(self, env, eval_input, job_pool)

    return launch_worker


def _updates_the_running_map_run(original: Callable[..., None]) -> Callable[..., None]:
    def update(
        self: Any,
        max_concurrency: int | None,
        tolerated_failure_count: int | None,
        tolerated_failure_percentage: float | None,
    ) -> None:
        original(self, max_concurrency, tolerated_failure_count, tolerated_failure_percentage)
        tolerates: set[str] = getattr(self, _UPDATED_TOLERANCES, set())
        if tolerated_failure_count is not None:
            tolerates.add("count")
        if tolerated_failure_percentage is not None:
            tolerates.add("percentage")
        setattr(self, _UPDATED_TOLERANCES, tolerates)
        workers: _Workers | None = getattr(self, _MAP_RUN_WORKERS, None)
        if workers is None or max_concurrency is None or workers.job_pool._is_terminated():
            return
        with workers.lock:
            pending = len(workers.job_pool._open_jobs)
            wanted = pending if int(max_concurrency) == 0 else int(max_concurrency) - workers.launched
            extra = max(0, min(wanted, pending))
            workers.launched += extra
        for _ in range(extra):
            workers.start()

    return update


# -- ItemReader input types moto lacks (fix 60) ----------------------------------------------------

_READER = "moto.stepfunctions.parser.asl.component.state.exec.state_map.item_reader"
_MORE_INPUT_TYPES = ("JSONL", "MANIFEST")


@dataclass(frozen=True)
class _InputTypeValue:
    """An input type moto's enum lacks, as the rest of moto reads one (``.value``)."""

    value: str


def _more_input_types(original: Callable[[Any, str], None]) -> Callable[[Any, str], None]:
    def init(self: Any, input_type: str) -> None:
        if input_type in _MORE_INPUT_TYPES:
            self.input_type_value = _InputTypeValue(input_type)
            return
        original(self, input_type)

    return init


def json_lines(text: str) -> list[Any]:
    """The items of a JSON Lines object: one JSON value a line, blank lines skipped."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def inventory_items(manifest: dict[str, Any], read: Callable[[str, str], bytes]) -> list[dict[str, str]]:
    """The objects an S3 inventory manifest lists, one item each: the columns of its CSV files
    (gzipped or not), named by its ``fileSchema``. ``read(bucket, key)`` fetches a file."""
    if str(manifest.get("fileFormat", "CSV")).upper() != "CSV":
        raise ValueError(f"inventory files in {manifest.get('fileFormat')} format are not read")
    columns = [name.strip() for name in str(manifest["fileSchema"]).split(",")]
    bucket = str(manifest["destinationBucket"]).rsplit(":", 1)[-1]
    items: list[dict[str, str]] = []
    for listed in manifest.get("files", []):
        body = read(bucket, str(listed["key"]))
        text = (gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body).decode("utf-8")
        items.extend(dict(zip(columns, row, strict=False)) for row in csv.reader(io.StringIO(text)) if row)
    return items


def _transformer(kind: str) -> Any:
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.item_reader.eval.resource_output_transformer.transformer import (
        ResourceOutputTransformer,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.credentials import StateCredentials
    from moto.stepfunctions.parser.asl.utils.boto_client import boto_client_for

    class Transformer(ResourceOutputTransformer):  # type: ignore[misc]
        """The object the reader fetched, as items (JSON Lines, or an inventory manifest's)."""

        def _eval_body(self, env: Any) -> None:
            reader_config = env.stack.pop()
            text = env.stack.pop()
            try:
                if kind == "JSONL":
                    items = json_lines(text)
                else:
                    s3 = boto_client_for(
                        region=env.aws_execution_details.region,
                        service="s3",
                        state_credentials=StateCredentials(role_arn=env.aws_execution_details.role_arn),
                    )
                    items = inventory_items(
                        json.loads(text),
                        lambda bucket, key: s3.get_object(Bucket=bucket, Key=key)["Body"].read(),
                    )
            except (ValueError, KeyError, TypeError) as error:
                cause = f"The {kind} item source could not be read: {error}"
                raise _map_run_failure(
                    env, "StatesItemReaderFailed", "TaskFailed", "mapRunFailedEventDetails", cause
                ) from None
            env.stack.append(items[: reader_config["MaxItemsValue"]])

    return Transformer()


def _more_transformers(original: Callable[..., Any]) -> Callable[..., Any]:
    def resource_output_transformer_for(input_type: Any) -> Any:
        if isinstance(input_type.input_type_value, _InputTypeValue):
            return _transformer(input_type.input_type_value.value)
        return original(input_type=input_type)

    return resource_output_transformer_for


# -- the item source's S3 calls (fix 107) ---------------------------------------------------------

_S3_READER = f"{_READER}.eval.resource_eval_s3:ResourceEvalS3"


def _reader_failure_named(original: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    def eval_resource(self: Any, env: Any) -> None:
        from botocore.exceptions import ClientError

        try:
            original(self, env)
        except ClientError as error:
            answer = error.response.get("Error", {})
            metadata = error.response.get("ResponseMetadata", {})
            cause = (
                f"{answer.get('Message') or answer.get('Code')} (Service: S3, Status Code: "
                f"{metadata.get('HTTPStatusCode')}, Request ID: {metadata.get('RequestId')})"
            )
            raise _map_run_failure(
                env, "StatesItemReaderFailed", "TaskFailed", "mapRunFailedEventDetails", cause
            ) from None

    return eval_resource


def _every_listed_object(_: Any) -> Any:
    def handle_list_objects_v2(env: Any, resource_runtime_part: Any, state_credentials: Any) -> None:
        from moto.stepfunctions.parser.asl.component.state.exec.state_map.item_reader.eval.resource_eval_s3 import (
            ResourceEvalS3,
        )

        s3 = ResourceEvalS3._get_s3_client(
            resource_runtime_part=resource_runtime_part, state_credentials=state_credentials
        )
        parameters = env.stack.pop()
        pages = s3.get_paginator("list_objects_v2").paginate(**parameters)
        env.stack.append([entry for page in pages for entry in page.get("Contents", [])])

    return staticmethod(handle_list_objects_v2)


PATCHES: tuple[Patch, ...] = (
    Patch(49, _PARSER, "parse", _parsed_with_map_settings),  # and fix 88
    Patch(49, _ITERATION, "_map_run", _batched_and_judged),
    Patch(51, _ITERATION, "_launch_worker", _workers_remembered),
    Patch(51, _MAP_RUN_RECORD, "update", _updates_the_running_map_run),
    Patch(60, f"{_READER}.reader_config.input_type:InputType", "__init__", _more_input_types),
    Patch(60, f"{_READER}.item_reader_decl", "resource_output_transformer_for", _more_transformers),
    Patch(107, _S3_READER, "eval_resource", _reader_failure_named),
    Patch(107, _S3_READER, "_handle_list_objects_v2", _every_listed_object),
)
