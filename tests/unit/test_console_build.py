"""The build puts the console's graph library into every distribution (setup.py): from node_modules
after ``npm ci``, else from the npm registry at the version and integrity package-lock.json pins."""

from __future__ import annotations

import base64
import hashlib
import http.server
import importlib.util
import io
import json
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests import REPOSITORY_ROOT

DAGRE, GRAPHLIB = "@dagrejs/dagre", "@dagrejs/graphlib"


@pytest.fixture(scope="module")
def build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("setup_under_test", REPOSITORY_ROOT / "setup.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # not as __main__: setup() does not run
    return module


def tarball(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def a_tree(root: Path, tarballs: dict[str, bytes]) -> Path:
    """A checkout with package-lock.json pinning both packages, and no node_modules."""
    lock = {
        "packages": {
            f"node_modules/{DAGRE}": {"version": "3.1.3", "integrity": integrity(tarballs[DAGRE])},
            f"node_modules/{GRAPHLIB}": {"version": "4.0.6", "integrity": integrity(tarballs[GRAPHLIB])},
        }
    }
    root.mkdir(parents=True)
    (root / "package-lock.json").write_text(json.dumps(lock))
    return root


@pytest.fixture
def registry() -> Iterator[tuple[str, dict[str, bytes], list[str]]]:
    """A loopback npm registry serving the two tarballs at npm's paths; what it was asked, listed."""
    tarballs = {
        DAGRE: tarball({"dist/dagre.min.js": "/* dagre */", "LICENSE": "dagre licence"}),
        GRAPHLIB: tarball({"LICENSE": "graphlib licence"}),
    }
    paths = {"/@dagrejs/dagre/-/dagre-3.1.3.tgz": DAGRE, "/@dagrejs/graphlib/-/graphlib-4.0.6.tgz": GRAPHLIB}
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            if self.path not in paths:
                self.send_error(404)
                return
            body = tarballs[paths[self.path]]
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", tarballs, asked
    finally:
        server.shutdown()


def test_a_tree_without_node_modules_gets_the_pinned_files_from_the_registry(
    build: ModuleType,
    registry: tuple[str, dict[str, bytes], list[str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    # Given a fresh clone (no node_modules, no vendored files) and npm's registry setting
    url, tarballs, asked = registry
    tree = a_tree(tmp_path / "clone", tarballs)
    monkeypatch.setenv("npm_config_registry", url)
    # When the build runs its step, twice
    written = build.vendor_console_assets(tree)
    again = build.vendor_console_assets(tree)
    # Then the console's three files are in place, each from its package, fetched once
    vendor = tree / build.VENDOR
    assert sorted(written) == ["LICENSE.dagre.txt", "LICENSE.graphlib.txt", "dagre.min.js"]
    assert (vendor / "dagre.min.js").read_text() == "/* dagre */"
    assert (vendor / "LICENSE.graphlib.txt").read_text() == "graphlib licence"
    assert again == []
    assert sorted(asked) == ["/@dagrejs/dagre/-/dagre-3.1.3.tgz", "/@dagrejs/graphlib/-/graphlib-4.0.6.tgz"]


def test_a_tarball_that_is_not_the_pinned_one_is_refused(
    build: ModuleType,
    registry: tuple[str, dict[str, bytes], list[str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    # Given a lock that pins other bytes than the registry serves
    url, tarballs, _ = registry
    tree = a_tree(tmp_path / "clone", {**tarballs, DAGRE: b"other bytes"})
    monkeypatch.setenv("npm_config_registry", url)
    # When the build runs its step, then it stops and says why, writing no graph library
    with pytest.raises(
        build.ConsoleAssetError, match=r"is not the @dagrejs/dagre that package-lock\.json pins"
    ):
        build.vendor_console_assets(tree)
    assert not (tree / build.VENDOR / "dagre.min.js").exists()


def test_node_modules_is_used_when_npm_ci_has_run(
    build: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # Given a checkout after npm ci, and a registry nobody answers
    tree = a_tree(tmp_path / "checkout", {DAGRE: b"", GRAPHLIB: b""})
    for package, inside, text in (
        (DAGRE, "dist/dagre.min.js", "/* installed */"),
        (DAGRE, "LICENSE", "d"),
        (GRAPHLIB, "LICENSE", "g"),
    ):
        path = tree / "node_modules" / package / inside
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")
    # When the build runs its step, then it copied them, fetching nothing
    build.vendor_console_assets(tree)
    assert (tree / build.VENDOR / "dagre.min.js").read_text() == "/* installed */"
