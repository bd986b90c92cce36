"""Issue 42's start-up fixes change no behaviour: moto's heavy modules load when first needed (fix 81
and the patches that wait for their module's import), and parsed programs are kept on disk
(sfn_idempotency.local.engine.program_store). What they keep is checked here; the seconds are `make bench`'s."""

from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.compat import interpreter, patching
from sfn_idempotency.local.compat.patching import IncompatibleMotoError, Patch, apply, keep, missing
from sfn_idempotency.local.engine import clients, patches, program_store
from sfn_idempotency.local.engine import cloud as cloud_module

SUBPROCESS_DEADLINE_SECONDS = 120
INTERPRETER_PACKAGE = "moto.stepfunctions.parser.asl.component"
HEAVY_MODULES = ("moto.batch.models", "moto.ec2", "moto.cloudformation.parsing", "moto.apigateway.models")


def python(code: str, env: dict[str, str] | None = None) -> Any:
    """Run ``code`` in a fresh interpreter; what it prints last, as JSON."""
    finished = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=False,
        timeout=SUBPROCESS_DEADLINE_SECONDS,
        env={**os.environ, **(env or {})},
    )
    assert finished.returncode == 0, finished.stderr
    return json.loads(finished.stdout.splitlines()[-1])


def test_the_engine_runs_the_flow_without_loading_batch_ec2_cloudformation_or_api_gateway():
    # Given a fresh process, When a LocalCloud starts and the idempotency flow runs an order twice
    loaded = python(f"""
        import json, sys
        from sfn_idempotency.local import IdempotentService, LocalCloud
        with LocalCloud(retry_wait_scale=0) as cloud:
            service = IdempotentService(cloud)
            runs = [service.run({{"orderId": "o-1", "amount": 1}}).status for _ in range(2)]
            print(json.dumps({{"runs": runs, "loaded": [m for m in {HEAVY_MODULES!r} if m in sys.modules]}}))
    """)
    # Then it ran, and none of moto's heavy modules was imported
    assert loaded == {"runs": ["SUCCEEDED", "SUCCEEDED"], "loaded": []}


def test_a_batch_request_and_a_stack_load_what_they_need_with_the_fixes_applied():
    # Given a fresh process whose engine started without moto's Batch and CloudFormation
    answered = python("""
        import json, sys
        from sfn_idempotency.local import LocalCloud
        with LocalCloud() as cloud:
            before = "moto.batch.models" in sys.modules
            queues = cloud.client("batch").describe_job_queues()["jobQueues"]
            # When a stack with a table is created (fix 40 sets its TTL, which moto ignored)
            template = {"Resources": {"Table": {"Type": "AWS::DynamoDB::Table", "Properties": {
                "TableName": "orders", "BillingMode": "PAY_PER_REQUEST",
                "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
                "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                "TimeToLiveSpecification": {"AttributeName": "expiration", "Enabled": True}}}}}
            cloud.client("cloudformation").create_stack(StackName="s", TemplateBody=json.dumps(template))
            ttl = cloud.dynamodb.describe_time_to_live(TableName="orders")["TimeToLiveDescription"]
            print(json.dumps({"before": before, "queues": queues, "ttl": ttl}))
    """)
    # Then Batch answered from its backend, loaded on demand, and the stack's fix applied
    assert answered == {
        "before": False,
        "queues": [],
        "ttl": {"TimeToLiveStatus": "ENABLED", "AttributeName": "expiration"},
    }


@pytest.fixture
def on_demand_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module, not imported yet, under a prefix that loads on demand."""
    (tmp_path / "lazy_owner_for_test.py").write_text(
        "class Owner:\n    def greet(self):\n        return 'hi'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(patching, "LOADED_ON_DEMAND", ("lazy_owner_for_test",))
    yield "lazy_owner_for_test"
    sys.modules.pop("lazy_owner_for_test", None)


def test_a_patch_of_a_module_that_loads_on_demand_applies_at_its_first_import(on_demand_module: str):
    # Given a patch of a module that has not been imported
    patch = Patch(0, f"{on_demand_module}:Owner", "greet", lambda original: lambda self: "patched")
    # When the patches are checked and applied
    assert missing((patch,), loaded_only=True) == []
    apply((patch,))
    # Then the module is still not imported, and once it is, the patch is in place
    assert on_demand_module not in sys.modules
    module = __import__(on_demand_module)
    assert module.Owner().greet() == "patched"


def test_a_module_that_loads_on_demand_and_lacks_a_patched_internal_refuses_at_its_import(
    on_demand_module: str,
):
    # Given a patch of an attribute the module does not have
    patch = Patch(99, f"{on_demand_module}:Owner", "gone", keep)
    # When it is applied before the import, Then the import refuses, naming the fix
    apply((patch,))
    with pytest.raises(IncompatibleMotoError, match=f"fix 99: {on_demand_module}:Owner.gone is missing"):
        __import__(on_demand_module)
    # And the full check names it too (it imports what loads on demand)
    sys.modules.pop(on_demand_module, None)
    assert missing((patch,)) == [f"fix 99: {on_demand_module}:Owner.gone is missing"]


class CountingParse:
    def __init__(self) -> None:
        self.definitions: list[str] = []

    def __call__(self, definition: str) -> dict[str, Any]:
        self.definitions.append(definition)
        if "refused" in definition:
            raise ValueError("moto refuses it")
        return {"program of": definition}


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(program_store.CACHE_DIR_VARIABLE, str(tmp_path))
    return tmp_path / program_store.FOLDER


def test_a_program_parsed_once_is_read_back_without_parsing(store: Path):
    # Given a definition parsed and stored
    parse = CountingParse()
    first = program_store.stored("definition one", parse)
    # When it is asked for again (another process reads the same folder)
    again = program_store.stored("definition one", parse)
    # Then it was parsed once, and what was read back is the same program
    assert (parse.definitions, again, first) == (["definition one"], first, {"program of": "definition one"})
    assert [path.suffix for path in store.iterdir()] == [".pickle"]


def test_a_refused_definition_is_not_stored_and_a_damaged_entry_is_parsed_again(store: Path):
    parse = CountingParse()
    # Given a definition moto refuses: it raises every time, and nothing is kept
    for _ in range(2):
        with pytest.raises(ValueError, match="refuses"):
            program_store.stored("refused definition", parse)
    assert not store.exists() or list(store.iterdir()) == []
    # Given a stored program whose file was cut short (a process died while writing it)
    program_store.stored("definition two", parse)
    (entry,) = store.iterdir()
    entry.write_bytes(entry.read_bytes()[:5])
    # When it is asked for, Then it is parsed again, and stored whole
    assert program_store.stored("definition two", parse) == {"program of": "definition two"}
    assert parse.definitions.count("definition two") == 2
    assert program_store.stored("definition two", parse) == {"program of": "definition two"}
    assert parse.definitions.count("definition two") == 2


def test_a_changed_fix_of_moto_makes_stored_programs_unread(store: Path, monkeypatch: pytest.MonkeyPatch):
    # Given a program stored by the engine as it is
    parse = CountingParse()
    program_store._fixes_fingerprint.cache_clear()
    program_store.stored("definition three", parse)

    # When one of the fixes that patch moto's parser changes (compat/interpreter.py, say)
    fix = Path(interpreter.__file__).resolve()
    read_bytes = Path.read_bytes

    def changed(path: Path) -> bytes:
        return read_bytes(path) + (b"# changed" if path.resolve() == fix else b"")

    monkeypatch.setattr(Path, "read_bytes", changed)
    program_store._fixes_fingerprint.cache_clear()
    program_store.stored("definition three", parse)
    program_store._fixes_fingerprint.cache_clear()  # later tests fingerprint the sources as they are

    # Then the program is parsed again: a program parsed by other fixes is never read back
    assert parse.definitions == ["definition three", "definition three"]


def test_the_store_can_be_turned_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv(program_store.CACHE_DIR_VARIABLE, program_store.OFF)
    parse = CountingParse()
    program_store.stored("definition", parse)
    program_store.stored("definition", parse)
    assert parse.definitions == ["definition", "definition"]


def test_a_stored_program_runs_as_the_one_parsed_in_process(tmp_path: Path):
    # Given a folder of programs written by one process that ran the flow
    code = """
        import json
        from sfn_idempotency.local import IdempotentService, LocalCloud
        with LocalCloud(retry_wait_scale=0) as cloud:
            service = IdempotentService(cloud)
            results = [service.run({"orderId": "o-7", "amount": 2}) for _ in range(2)]
            first, again = results
            print(json.dumps({
                "runs": [[r.status, r.states, sorted(r.output)] for r in results],
                "replayed the same": again.output == first.output,
            }))
    """
    env = {program_store.CACHE_DIR_VARIABLE: str(tmp_path)}
    parsed = python(code, env)
    # When another process runs it on the programs read back
    stored = list((tmp_path / program_store.FOLDER).iterdir())
    read_back = python(code, env)
    # Then both gave the same outputs and visited the same states, and nothing new was stored
    assert read_back == parsed
    assert parsed["replayed the same"] is True
    assert [status for status, _, _ in parsed["runs"]] == ["SUCCEEDED", "SUCCEEDED"]
    assert sorted((tmp_path / program_store.FOLDER).iterdir()) == sorted(stored)


def test_a_clouds_start_walks_the_interpreter_once_checks_moto_once_and_makes_two_clients(
    monkeypatch: pytest.MonkeyPatch,
):
    # Given the walk, the check of moto's internals and the clients made, counted
    walks: list[str] = []
    checks: list[bool] = []
    made: list[str] = []
    walk, incompatibilities, local_client = (
        pkgutil.walk_packages,
        patches.incompatibilities,
        clients.local_client,
    )

    def counted_walk(path: Any, prefix: str = "", *rest: Any) -> Any:
        walks.append(prefix)
        return walk(path, prefix, *rest)

    def counted_check(**options: bool) -> list[str]:
        checks.append(True)
        return incompatibilities(**options)

    def counted_client(service: str, *args: Any, **options: Any) -> Any:
        made.append(service)
        return local_client(service, *args, **options)

    monkeypatch.setattr(pkgutil, "walk_packages", counted_walk)
    monkeypatch.setattr(patches, "incompatibilities", counted_check)
    monkeypatch.setattr(cloud_module, "local_client", counted_client)
    interpreter._interpreter_module_names.cache_clear()

    # When two clouds start, one after the other
    for _ in range(2):
        with LocalCloud():
            started_with = list(made)
    # Then the interpreter's modules were listed once, moto checked once a cloud, and only the
    # clients every test uses were made; EventBridge's is made when first asked for, once
    assert walks.count(f"{INTERPRETER_PACKAGE}.") == 1
    assert len(checks) == 2
    assert started_with == ["stepfunctions", "dynamodb"] * 2
    with LocalCloud() as cloud:
        assert cloud.events is cloud.events
        assert made.count("events") == 1


def test_a_running_cloud_collects_young_objects_less_often_and_its_close_restores_the_thresholds():
    # Given the process's own collector thresholds, CPython's defaults
    import gc

    own = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        # When a cloud runs and closes, and then one runs while young collections are switched off
        with LocalCloud():
            running = gc.get_threshold()
        closed = gc.get_threshold()
        gc.set_threshold(0, 10, 10)
        with LocalCloud():
            switched_off = gc.get_threshold()
    finally:
        gc.set_threshold(*own)

    # Then the running cloud's first threshold is 10,000 (sfn_idempotency.local.engine.collector),
    # closing it restored the process's, and collection switched off stayed off
    assert running == (10_000, 10, 10)
    assert closed == (700, 10, 10)
    assert switched_off == (0, 10, 10)
