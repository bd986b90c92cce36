"""Functions created through the Lambda API unpack their code into a temporary folder; none of it
outlives the function or the cloud (issue 27: a conformance run used to leave a hundred behind)."""

from __future__ import annotations

import io
import signal
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from sfn_idempotency.local import LocalCloud
from tests.servers import read_ready_line, start_server

ROLE = "arn:aws:iam::123456789012:role/fn-role"
STOP_DEADLINE_SECONDS = 60


def zipped_handler() -> bytes:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as package:
        package.writestr("app.py", "def handler(event, context):\n    return 1\n")
    return archive.getvalue()


def create_and_invoke(client: object, iam: object, names: tuple[str, ...]) -> None:
    iam.create_role(RoleName="fn-role", AssumeRolePolicyDocument="{}")  # type: ignore[attr-defined]
    for name in names:
        client.create_function(  # type: ignore[attr-defined]
            FunctionName=name,
            Runtime="python3.12",
            Role=ROLE,
            Handler="app.handler",
            Code={"ZipFile": zipped_handler()},
        )
        client.invoke(FunctionName=name, Payload=b"{}")  # type: ignore[attr-defined]


def unpacked(folder: Path) -> set[str]:
    """The functions whose code is unpacked under ``folder`` (``sfn-local-*/<name>-*``)."""
    return {path.name.rsplit("-", 1)[0] for path in folder.glob("sfn-local-*/*")}


@pytest.fixture
def temporary_folder(tmp_path: Path) -> Iterator[Path]:
    saved = tempfile.tempdir
    tempfile.tempdir = str(tmp_path)
    yield tmp_path
    tempfile.tempdir = saved


def test_a_deleted_function_leaves_no_code_and_a_closed_cloud_none_at_all(temporary_folder: Path):
    # Given two invoked functions, their code unpacked
    with LocalCloud() as cloud:
        client = cloud.client("lambda")
        create_and_invoke(client, cloud.client("iam"), ("kept", "deleted"))
        before = unpacked(temporary_folder)

        # When one is deleted
        client.delete_function(FunctionName="deleted")
        after_delete = unpacked(temporary_folder)

    # Then its code went at once, and the rest when the cloud closed
    assert before == {"kept", "deleted"}
    assert after_delete == {"kept"}
    assert list(temporary_folder.iterdir()) == []


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_serve_leaves_no_code_folder_after_a_signal(tmp_path: Path, stop: signal.Signals):
    # Given serve, whose temporary folder is the test's, running a function created through the API
    process = start_server(environment={"TMPDIR": str(tmp_path)})
    ready = read_ready_line(process)
    session = boto3.Session(aws_access_key_id="local", aws_secret_access_key="local", region_name="us-east-1")
    client = session.client("lambda", endpoint_url=ready["endpoint"])
    create_and_invoke(client, session.client("iam", endpoint_url=ready["endpoint"]), ("served",))
    assert unpacked(tmp_path) == {"served"}

    # When it is stopped by the signal
    process.send_signal(stop)
    _, stderr = process.communicate(timeout=STOP_DEADLINE_SECONDS)

    # Then it stopped cleanly and no code folder remains
    assert process.returncode == 0, stderr
    assert list(tmp_path.glob("sfn-local-*")) == []
