"""The boto3 clients of a LocalCloud: fake credentials that never leave the machine, from one
session shared by every cloud of the process."""

from __future__ import annotations

import threading
from typing import Any

import boto3
from botocore.config import Config

FAKE_CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
_clients_lock = threading.Lock()
_session_of_clients: boto3.Session | None = None


def _clients_session() -> boto3.Session:
    """The session every LocalCloud's clients come from. A session loads the SDK's endpoint rules
    (a megabyte of JSON) and each service's model once; moto drops boto3's default session at every
    start, so each LocalCloud, one per test, loaded them all again (about 0.2 s a start)."""
    global _session_of_clients
    if _session_of_clients is None:
        _session_of_clients = boto3.Session()
    return _session_of_clients


def local_client(service: str, region: str, endpoint_url: str | None, *, inject_host_prefix: bool) -> Any:
    with _clients_lock:  # a boto3 session makes one client at a time
        return _clients_session().client(
            service,
            region_name=region,
            endpoint_url=endpoint_url,
            config=Config(inject_host_prefix=inject_host_prefix),
            **FAKE_CREDENTIALS,
        )
