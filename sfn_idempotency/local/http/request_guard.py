"""Who may talk to a served engine: its own console and the user's own clients, no web page.

``serve`` has no authentication (the AWS CLI and SDKs must work unchanged), so two checks stand in
front of everything it answers, before any service sees the request:

- **Host** must name the server: a loopback name, the address it listens on, or a name the user
  allowed. A page on a host name of the attacker's that resolves to 127.0.0.1 (DNS rebinding) is
  same-origin with the endpoint and needs no CORS; its requests carry that foreign name in ``Host``.
- **Origin** (or, without it, ``Referer``) must be the console's own or one the user allowed. A
  browser sends one of them with every cross-origin request it makes; a request that a page made
  while hiding both (``referrerpolicy="no-referrer"`` on an image) still says ``Sec-Fetch-Site``.

The AWS CLI, the SDKs and the engine's own clients send no ``Origin``, ``Referer`` or
``Sec-Fetch-Site``: for them nothing changes.
"""

from __future__ import annotations

import functools
import ipaddress
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

ALLOW_ORIGIN_FLAG = "--allow-origin"
ALLOW_HOST_FLAG = "--allow-host"
ALLOW_ANY_ORIGIN_FLAG = "--allow-any-origin"
ALLOW_ORIGINS_VARIABLE = "SFN_IDEMPOTENCY_ALLOW_ORIGINS"
ALLOW_HOSTS_VARIABLE = "SFN_IDEMPOTENCY_ALLOW_HOSTS"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
ERROR_CODE = "AccessDeniedException"
_DEFAULT_PORTS = {"http": 80, "https": 443}
# What Fetch Metadata says of a request a page on another origin made (``none`` is the user typing
# the address, ``same-origin`` the console itself).
_FOREIGN_FETCH_SITES = frozenset({"cross-site", "same-site"})


class BadOriginError(ValueError):
    """An ``--allow-origin`` value that is not an origin (``scheme://host[:port]``)."""


Origin = tuple[str, str, int]  # scheme, host name, port: how browsers compare origins


def parse_origin(text: str) -> Origin:
    """``http://localhost:3000`` as (scheme, host, port); a path, query or user part is refused."""
    parts = urlsplit(text.strip())
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise BadOriginError(f"{text!r} is not an origin: expected http(s)://host[:port]")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise BadOriginError(
            f"{text!r} is not an origin: no path, query or user part, only scheme://host[:port]"
        )
    try:
        port = parts.port or _DEFAULT_PORTS[parts.scheme]
    except ValueError:
        raise BadOriginError(f"{text!r} is not an origin: its port is not a number") from None
    return parts.scheme, parts.hostname.lower(), port


def split_list(value: str | None) -> list[str]:
    """An environment variable's list: separated by commas or white space."""
    return [item for item in (value or "").replace(",", " ").split() if item]


@dataclass(frozen=True)
class Refusal:
    """Why a request was refused: an AWS-shaped JSON error (``AccessDeniedException``, 403)."""

    message: str
    status: int = 403

    @property
    def body(self) -> bytes:
        return json.dumps({"__type": ERROR_CODE, "message": self.message}).encode("utf-8")

    @property
    def headers(self) -> list[tuple[str, str]]:
        return [
            # Plain JSON: a browser shows it (a page it would download is an error page instead),
            # and the SDKs' JSON parsers read it all the same.
            ("Content-Type", "application/json"),
            ("x-amzn-ErrorType", ERROR_CODE),
            ("Content-Length", str(len(self.body))),
        ]


@dataclass(frozen=True)
class AccessPolicy:
    """The origins and host names a served endpoint answers.

    ``console_ports``: the ports whose loopback origins (and the ``listen_host``'s) are the
    console's own; a front door on a port of its own admits the console's, not its own.
    """

    listen_host: str = "127.0.0.1"
    console_ports: tuple[int, ...] = ()
    extra_origins: frozenset[Origin] = frozenset()
    extra_hosts: frozenset[str] = frozenset()
    any_origin: bool = False

    @classmethod
    def build(
        cls,
        listen_host: str,
        console_ports: Iterable[int] = (),
        *,
        origins: Iterable[str] = (),
        hosts: Iterable[str] = (),
        any_origin: bool = False,
    ) -> AccessPolicy:
        """From the command line's values; a value that is not an origin raises BadOriginError."""
        return cls(
            listen_host=listen_host,
            console_ports=tuple(console_ports),
            extra_origins=frozenset(parse_origin(origin) for origin in origins),
            extra_hosts=frozenset(_host_name(host) for host in hosts),
            any_origin=any_origin,
        )

    @property
    def console_origins(self) -> frozenset[Origin]:
        names = {_host_name(name) for name in (*LOOPBACK_NAMES, self.listen_host)}
        return frozenset(("http", name, port) for name in names for port in self.console_ports)

    def origin_allowed(self, origin: str) -> bool:
        if self.any_origin:
            return True
        try:
            parsed = parse_origin(origin)
        except BadOriginError:
            return False  # "null" (a sandboxed frame, a file), or anything else that is no origin
        return parsed in self.console_origins or parsed in self.extra_origins

    def host_allowed(self, host_header: str) -> bool:
        name = _host_name(_without_port(host_header))
        return _is_loopback(name) or name == _host_name(self.listen_host) or name in self.extra_hosts

    def refusal(self, headers: Mapping[str, str]) -> Refusal | None:
        """None when the request may go on; ``headers`` by lower-case name."""
        host = headers.get("host", "")
        if not host or not self.host_allowed(host):
            name = _without_port(host) or "(none)"
            return Refusal(
                f"serve refused a request for host {host or '(none)'!r}: it does not name this server "
                f"(a web page on a host name that points here, DNS rebinding, looks like this). "
                f"To allow that name, start serve with {ALLOW_HOST_FLAG} {name}"
            )
        origin = headers.get("origin") or _referer_origin(headers.get("referer"))
        if origin is not None:
            if self.origin_allowed(origin):
                return None
            return Refusal(
                f"serve refused a request from origin {origin!r}: serve has no authentication and "
                f"answers only its own console and clients that send no Origin (the AWS CLI, SDKs). "
                f"To allow that origin, start serve with {ALLOW_ORIGIN_FLAG} {origin}"
            )
        if headers.get("sec-fetch-site", "") in _FOREIGN_FETCH_SITES and not self.any_origin:
            return Refusal(
                "serve refused a request that a web page on another site made without saying its "
                "origin (Sec-Fetch-Site: " + headers["sec-fetch-site"] + ")"
            )
        return None


def guarded(app: WsgiApp, policy: AccessPolicy) -> WsgiApp:
    """``app`` behind the policy: a refused request gets the JSON error and reaches nothing."""

    def dispatch(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        refusal = policy.refusal(_wsgi_headers(environ))
        if refusal is None:
            return app(environ, start_response)
        start_response(f"{refusal.status} Forbidden", refusal.headers)
        return [refusal.body]

    return dispatch


_READ_HEADERS = ("host", "origin", "referer", "sec-fetch-site")  # all that refusal() reads


def _wsgi_headers(environ: Mapping[str, Any]) -> dict[str, str]:
    named = ((name, "HTTP_" + name.replace("-", "_").upper()) for name in _READ_HEADERS)
    return {name: str(environ[key]) for name, key in named if key in environ}


def _referer_origin(referer: str | None) -> str | None:
    if not referer:
        return None
    parts = urlsplit(referer)
    # An unreadable Referer still came from a page: it is refused as the origin it claims to be.
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else referer


def _without_port(host_header: str) -> str:
    if host_header.startswith("["):  # [::1]:8083
        return host_header.split("]", 1)[0] + "]"
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


LOOPBACK_ANSWERS_KEPT = 256


def _host_name(name: str) -> str:
    """A host name as compared: lower case, without a trailing dot, IPv6 without brackets."""
    return name.strip().lower().rstrip(".").removeprefix("[").removesuffix("]")


@functools.lru_cache(maxsize=LOOPBACK_ANSWERS_KEPT)  # asked for every request to serve
def _is_loopback(name: str) -> bool:
    # *.localhost always resolves to loopback (RFC 6761; browsers answer it themselves), so no
    # one can rebind it.
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
