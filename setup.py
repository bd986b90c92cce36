"""The build's one step beyond pyproject.toml: the console's graph library goes into every sdist and
wheel, however they are built (``python -m build``, ``pip wheel .``, ``pip install .``), not only
after ``make console-assets``.

The files come from ``node_modules`` when ``npm ci`` has run, else from the npm registry (the
version and sha512 integrity that package-lock.json pins; ``npm_config_registry`` names another
registry, as it does for npm). Nothing is fetched when the files are already in place.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import tarfile
import urllib.request
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = Path(__file__).resolve().parent
VENDOR = Path("sfn_idempotency", "console", "static", "vendor")
# What the console ships: (npm package, file inside the package, name in vendor/).
CONSOLE_FILES = (
    ("@dagrejs/dagre", "dist/dagre.min.js", "dagre.min.js"),
    ("@dagrejs/dagre", "LICENSE", "LICENSE.dagre.txt"),
    ("@dagrejs/graphlib", "LICENSE", "LICENSE.graphlib.txt"),
)
DEFAULT_REGISTRY = "https://registry.npmjs.org/"
FETCH_SECONDS = 120


class ConsoleAssetError(RuntimeError):
    """The console's files could not be put in place."""


def vendor_console_assets(root: Path = ROOT) -> list[str]:
    """Put the console's files into ``root``'s vendor folder; the names of those it wrote."""
    vendor = root / VENDOR
    missing = [entry for entry in CONSOLE_FILES if not (vendor / entry[2]).is_file()]
    if not missing:
        return []
    lock = json.loads((root / "package-lock.json").read_text(encoding="utf-8"))["packages"]
    tarballs: dict[str, tarfile.TarFile] = {}
    vendor.mkdir(parents=True, exist_ok=True)
    for package, inside, name in missing:
        installed = root / "node_modules" / package / inside
        if installed.is_file():
            data = installed.read_bytes()
        else:
            if package not in tarballs:
                tarballs[package] = _tarball(package, lock[f"node_modules/{package}"])
            member = tarballs[package].extractfile(f"package/{inside}")
            if member is None:
                raise ConsoleAssetError(f"{package} has no {inside}")
            data = member.read()
        (vendor / name).write_bytes(data)
    return [name for _, _, name in missing]


def _tarball(package: str, locked: dict[str, str]) -> tarfile.TarFile:
    """The package's tarball at its locked version, checked against its locked integrity."""
    registry = os.environ.get("npm_config_registry") or DEFAULT_REGISTRY  # noqa: SIM112 (npm's spelling)
    url = f"{registry.rstrip('/')}/{package}/-/{package.split('/')[-1]}-{locked['version']}.tgz"
    try:
        with urllib.request.urlopen(url, timeout=FETCH_SECONDS) as answer:
            data = answer.read()
    except OSError as error:
        raise ConsoleAssetError(
            f"the console's {package} is not in node_modules (run `npm ci`) and could not be fetched "
            f"from {url}: {error}"
        ) from None
    algorithm, _, expected = locked["integrity"].partition("-")
    if base64.b64encode(hashlib.new(algorithm, data).digest()).decode() != expected:
        raise ConsoleAssetError(f"{url} is not the {package} that package-lock.json pins (integrity differs)")
    return tarfile.open(fileobj=io.BytesIO(data), mode="r:gz")


class BuildPyWithConsole(build_py):  # type: ignore[misc]  # setuptools ships no types
    def run(self) -> None:
        vendor_console_assets()
        super().run()


class SdistWithConsole(sdist):  # type: ignore[misc]  # setuptools ships no types
    def run(self) -> None:
        vendor_console_assets()
        super().run()


if __name__ == "__main__":
    setup(cmdclass={"build_py": BuildPyWithConsole, "sdist": SdistWithConsole})
