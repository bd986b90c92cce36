"""Every command given arguments nobody meant: one line on stderr, exit code 2, never a traceback.

Run in process (the same `main` the console script calls); every endpoint is malformed or a closed
loopback port, so nothing ever runs for real and nothing leaves the machine."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfn_idempotency import cli
from tests.properties import examples
from tests.servers import free_port

CLOSED_ENDPOINT = f"http://127.0.0.1:{free_port()}"  # nothing listens there
WRAPPABLE = Path(__file__).parent / "wrappable.asl.json"


def files(folder: Path) -> dict[str, Path]:
    (folder / "binary.bin").write_bytes(bytes(range(256)) * 4)
    (folder / "empty.json").write_text("")
    (folder / "huge.json").write_text("[" + "1," * 2_000_000 + "1")  # 4 MB, and cut short
    return {path.name: path for path in folder.iterdir()}


@pytest.fixture(scope="module")
def hostile_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return files(tmp_path_factory.mktemp("hostile"))


texts = st.text(max_size=30)
ports = st.one_of(
    st.integers(max_value=0).map(str),
    st.integers(min_value=65_536).map(str),
    texts.filter(lambda t: not t.strip().isdigit()),
)
endpoints = st.one_of(
    st.sampled_from(
        ["notaurl", "http://", "ftp://127.0.0.1:9", "http://127.0.0.1:99999", "://x", CLOSED_ENDPOINT]
    ),
    texts.filter(lambda t: "://" not in t),
)
keys = st.one_of(st.sampled_from(["", " ", "\t", "no-hash", "#", "orders#", "#abc", " orders#abc"]), texts)
arns = st.one_of(
    st.sampled_from(["", "notanarn", "arn:aws:states:us-east-1:123456789012:stateMachine:nope"]), texts
)


def commands(hostile_files: dict[str, Path]) -> st.SearchStrategy[list[str]]:
    inputs = st.one_of(
        st.sampled_from(
            [f"@{path}" for path in hostile_files.values()] + ["@/nonexistent/x.json", "{not json", ""]
        ),
        texts,
    )
    return st.one_of(
        st.builds(lambda p: ["serve", "--port", p], ports),
        # hosts no address can be (the command would otherwise start serving)
        st.builds(
            lambda h: ["serve", "--host", h], texts.filter(lambda t: not t or any(c in t for c in " /:@?#"))
        ),
        st.builds(lambda e, i: ["start", "--endpoint-url", e, "--input", i], endpoints, inputs),
        st.builds(
            lambda a: ["start", "--endpoint-url", CLOSED_ENDPOINT, "--input", "{}", "--state-machine", a],
            arns,
        ),
        st.builds(
            lambda t: ["start", "--endpoint-url", CLOSED_ENDPOINT, "--input", "{}", "--timeout", t], texts
        ),
        st.builds(lambda e, k: ["record", "--endpoint-url", e, "--key", k], endpoints, keys),
        st.builds(lambda e, k: ["forget", "--endpoint-url", e, "--key", k, "--yes"], endpoints, keys),
        st.builds(lambda i: ["record", "--endpoint-url", CLOSED_ENDPOINT, "--input", i], inputs),
        st.builds(
            lambda a: ["graph", "--asl", a], st.sampled_from([str(p) for p in hostile_files.values()]) | texts
        ),
        st.builds(
            lambda d, s, k: ["wrap", d, "--state", s, "--key-prefix", k],
            st.sampled_from([str(p) for p in hostile_files.values()] + ["/nonexistent.asl.json"]) | texts,
            texts,
            texts,
        ),
        st.builds(
            lambda t: ["wrap", str(WRAPPABLE), "--state", "Place", "--key-prefix", "p", "--timeout", t],
            texts.filter(lambda t: not t.strip().isdigit() or int(t) < 1),
        ),
    )


def run(argv: list[str]) -> tuple[int, str]:
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = cli.main(argv)
        except SystemExit as exit_:  # argparse's own exits
            code = exit_.code if isinstance(exit_.code, int) else 2
    return code, stderr.getvalue()


@pytest.mark.slow
@pytest.mark.property
def test_hostile_arguments_are_one_line_and_exit_2(hostile_files: dict[str, Path]):
    @settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(argv=commands(hostile_files))
    def check(argv: list[str]) -> None:
        code, stderr = run(argv)
        assert code == 2, (argv, stderr)
        assert stderr.count("\n") == 1, (argv, stderr)
        assert stderr.endswith("\n")
        assert "Traceback" not in stderr

    check()


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--port", "-1"],
        ["start", "--endpoint-url", "notaurl", "--input", "{}"],
        ["record", "--endpoint-url", CLOSED_ENDPOINT, "--key", ""],
        ["graph", "--asl", "/nonexistent.asl.json"],
        ["graph", "--asl", "\n"],  # hypothesis found it: the message quoted the name with its newline
        ["wrap", "\r\n", "--state", "A", "--key-prefix", "p"],
        ["wrap", "\x00", "--state", "A", "--key-prefix", "p"],  # seed 1: "embedded null byte"
        ["start", "--endpoint-url", CLOSED_ENDPOINT, "--input", "@\x00"],
        ["serve", "--host", ""],  # botocore's "Invalid endpoint" ValueError
    ],
)
def test_the_invocations_that_once_raised_are_bad_input(argv: list[str], hostile_files: dict[str, Path]):
    code, stderr = run(argv)
    assert (code, stderr.count("\n")) == (2, 1), stderr


def test_a_binary_input_file_is_bad_input(hostile_files: dict[str, Path]):
    code, stderr = run(
        ["start", "--endpoint-url", CLOSED_ENDPOINT, "--input", f"@{hostile_files['binary.bin']}"]
    )
    assert code == 2
    assert "is not UTF-8 text" in stderr


def test_wrap_prints_a_definition_that_wraps_the_task(tmp_path: Path):
    # When the command wraps the Task of a definition file
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = cli.main(
            ["wrap", str(WRAPPABLE), "--state", "Place", "--key-prefix", "orders", "--timeout", "15"]
        )

    # Then it prints the wrapped definition: the Parallel and its Result, the settings in ComputeKey
    assert code == 0
    states = json.loads(stdout.getvalue())["States"]
    assert list(states) == ["Place", "Place.Result"]
    compute_key = states["Place"]["Branches"][0]["States"]["Place.ComputeKey"]
    assert compute_key["Parameters"]["Payload"]["settings"]["IDEMPOTENCY_TIMEOUT_SECONDS"] == "15"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--state", "Nope", "--key-prefix", "p"], "no state named 'Nope'"),
        (["--state", "Place", "--key-prefix", "p", "--hash-function", "x"], "IDEMPOTENCY_HASH_FUNCTION"),
        (
            ["--state", "Place", "--key-prefix", "p", "--expires-after", "10"],
            "IDEMPOTENCY_EXPIRES_AFTER_SECONDS",
        ),
    ],
)
def test_wrap_refuses_what_it_cannot_wrap_in_one_line(argv: list[str], message: str):
    code, stderr = run(["wrap", str(WRAPPABLE), *argv])
    assert (code, stderr.count("\n")) == (2, 1), stderr
    assert message in stderr
