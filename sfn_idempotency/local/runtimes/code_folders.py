"""Each function's code, unpacked once per code hash, as a warm environment keeps it; and its
layers, unpacked in their order into one folder beside it, as Lambda extracts them into ``/opt``.

The folders live under one folder per process, in the system's temporary folder: a function's
goes when the function is deleted or its code replaced, the whole when the cloud closes (or, at
the latest, when the process exits). A runtime registers what it keeps per folder (a loaded module,
a Node process) with ``on_forget``, and lets it go when the folder goes.
"""

from __future__ import annotations

import atexit
import io
import shutil
import tempfile
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

_lock = threading.RLock()
_folders: dict[tuple[str, str], Path] = {}  # (function ARN, code SHA-256) -> unpacked code
_root: Path | None = None
_forgetters: list[Callable[[Path], None]] = []


def on_forget(forget: Callable[[Path], None]) -> None:
    """``forget(folder)`` runs before a folder is removed."""
    if forget not in _forgetters:
        _forgetters.append(forget)


def unpacked(function: Any) -> Path:
    """The folder holding ``function``'s code (a moto ``LambdaFunction``), unpacked at first need."""
    key = (function.function_arn, function.code_sha_256)
    with _lock:
        folder = _folders.get(key)
        if folder is None:
            # New code for the same function (UpdateFunctionCode): the old folder has no more use.
            remove_where(lambda arn, sha: arn == function.function_arn)
            folder = Path(tempfile.mkdtemp(prefix=f"{function.function_name}-", dir=_process_root()))
            zipfile.ZipFile(io.BytesIO(function.code_bytes)).extractall(folder)
            _folders[key] = folder
        return folder


def layers_folder(function: Any) -> Path | None:
    """The function's layers, unpacked in order into one folder (its ``/opt``); None without
    layers. A later layer's file replaces an earlier one's, as on Lambda."""
    arns = [str(layer["Arn"]) for layer in getattr(function, "layers", None) or []]
    if not arns:
        return None
    folder = unpacked(function)
    opt = folder.with_name(f"{folder.name}.opt")
    with _lock:
        if not opt.is_dir():
            from moto.awslambda.models import lambda_backends

            backend = lambda_backends[function.account_id][function.region]
            staging = Path(tempfile.mkdtemp(prefix=f"{folder.name}.", dir=folder.parent))
            for arn in arns:
                zipfile.ZipFile(io.BytesIO(backend.layers_versions_by_arn(arn).code_bytes)).extractall(
                    staging
                )
            staging.rename(opt)
    return opt


def _process_root() -> Path:
    global _root
    if _root is None:
        _root = Path(tempfile.mkdtemp(prefix="sfn-local-"))
        atexit.register(remove_all)
    return _root


def remove_where(condition: Callable[[str, str], bool]) -> None:
    """Remove the folders of the (ARN, code hash) pairs ``condition`` names, and what runs from them."""
    with _lock:
        for key in [key for key in _folders if condition(*key)]:
            folder = _folders.pop(key)
            for forget in _forgetters:
                forget(folder)
            shutil.rmtree(folder, ignore_errors=True)
            shutil.rmtree(folder.with_name(f"{folder.name}.opt"), ignore_errors=True)


def remove_all() -> None:
    """Every function's code, and the process's folder for it (the cloud is closing)."""
    global _root
    with _lock:
        remove_where(lambda arn, sha: True)
        if _root is not None:
            shutil.rmtree(_root, ignore_errors=True)
            _root = None
