"""Parsed state machine programs kept on disk, so a new process skips ANTLR for a definition that an
earlier one parsed (part of fix 9's "each definition is parsed once").

moto parses a definition with an ANTLR parser written in Python: 0.1 to 0.4 s a definition, most of
a `serve` start that deploys eight machines, and of every test session's first executions. The
parsed program pickles in about 10 ms. A stored program is keyed by the definition, the versions of
Python, moto and the parser's libraries, and the engine's own source (``sfn_idempotency.local``,
whose fixes patch the parser), so a program parsed by other code is never read back.

The store is ``$SFN_IDEMPOTENCY_CACHE_DIR``, else ``$XDG_CACHE_HOME/sfn-idempotency`` (by default
``~/.cache/sfn-idempotency``), a folder only its user may read or write; ``SFN_IDEMPOTENCY_CACHE_DIR=off``
turns it off. Whatever cannot be read, written or unpickled is parsed again, never an error.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import pickle
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

CACHE_DIR_VARIABLE = "SFN_IDEMPOTENCY_CACHE_DIR"
OFF = "off"
FOLDER = "programs"
PROGRAMS_KEPT = 2_000  # about 100 KB each: at most some 200 MB, pruned to half, oldest first
PICKLE_DEPTH = 20_000  # programs are deep trees; pickle recurses once per level


def store_folder() -> Path | None:
    """Where programs are kept, or None when the store is off."""
    configured = os.environ.get(CACHE_DIR_VARIABLE)
    if configured == OFF:
        return None
    if configured:
        return Path(configured) / FOLDER
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "sfn-idempotency" / FOLDER


# What a parsed program is made of: a new release of any of them makes stored programs unread.
PARSER_DISTRIBUTIONS = ("moto", "antlr4-python3-runtime", "jsonpath-ng", "jsonata-python")


@functools.cache
def _fixes_fingerprint() -> str:
    """Python's, moto's and the parser's versions, and the engine's source (its fixes patch the
    parser): a change to any makes stored programs unread."""
    digest = hashlib.sha256(sys.version.encode())
    for distribution in PARSER_DISTRIBUTIONS:
        try:
            version = importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            version = "absent"
        digest.update(f"{distribution}=={version}".encode())
    engine = Path(__file__).resolve().parents[1]  # sfn_idempotency.local: compat/ holds the fixes
    for source in sorted(engine.rglob("*.py")):
        digest.update(source.relative_to(engine).as_posix().encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()


def _entry(folder: Path, definition: str) -> Path:
    key = hashlib.sha256(f"{_fixes_fingerprint()}\n{definition}".encode()).hexdigest()
    return folder / f"{key}.pickle"


def stored(definition: str, parse: Callable[[str], Any]) -> Any:
    """The program of ``definition``: read back from the store, or ``parse``d and stored."""
    folder = store_folder()
    if folder is None:
        return parse(definition)
    entry = _entry(folder, definition)
    try:
        return pickle.loads(entry.read_bytes())  # the user's own folder, written below
    except Exception:  # missing, partly written by a process that died, or from an older Python
        pass
    program = parse(definition)  # a definition moto refuses raises here: nothing is stored
    _store(folder, entry, program)
    return program


def _store(folder: Path, entry: Path, program: Any) -> None:
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        data = _pickled(program)
        with tempfile.NamedTemporaryFile(dir=folder, suffix=".partial", delete=False) as partial:
            partial.write(data)
        os.replace(partial.name, entry)  # readers see the whole program or none
        _prune(folder)
    except Exception:  # a read-only home, a full disk, a program that does not pickle: parse next time
        return


def _pickled(program: Any) -> bytes:
    depth = sys.getrecursionlimit()
    sys.setrecursionlimit(max(depth, PICKLE_DEPTH))
    try:
        return pickle.dumps(program, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        sys.setrecursionlimit(depth)


def _prune(folder: Path) -> None:
    entries = list(folder.glob("*.pickle"))
    if len(entries) <= PROGRAMS_KEPT:
        return
    entries.sort(key=lambda path: path.stat().st_mtime)
    for path in entries[: len(entries) // 2]:
        path.unlink(missing_ok=True)
