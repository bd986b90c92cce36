"""What the commands share: exit codes and defaults, the one-line parser, the arguments' validators,
the flag groups, and reading what the user gives (files, JSON, the idempotency settings, AWS clients)."""

from __future__ import annotations

import argparse
import ipaddress
import json
import re
import sys
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from sfn_idempotency.deployed.remote import client, only_table
from sfn_idempotency.lambdas.compute_key.computation import key_of
from sfn_idempotency.lambdas.compute_key.settings import IdempotencySettings
from sfn_idempotency.settings import example_settings

EXIT_FAILED_EXECUTION = 1
EXIT_BAD_INPUT = 2
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8083
MIN_PORT, MAX_PORT = 1, 65535
# A DNS label (and the underscores of container names), dot-separated.
HOST_NAME = re.compile(
    r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*"
)
DEFAULT_WAIT_SECONDS = 300.0
# flag -> the key Lambda's environment variable it overrides
SETTING_FLAGS = {
    "key_prefix": "IDEMPOTENCY_KEY_PREFIX",
    "event_key_jmespath": "IDEMPOTENCY_EVENT_KEY_JMESPATH",
    "payload_validation_jmespath": "IDEMPOTENCY_PAYLOAD_VALIDATION_JMESPATH",
    "expires_after": "IDEMPOTENCY_EXPIRES_AFTER_SECONDS",
    "timeout_seconds": "IDEMPOTENCY_TIMEOUT_SECONDS",
    "hash_function": "IDEMPOTENCY_HASH_FUNCTION",
}


class CliError(Exception):
    """Bad input: one line on stderr, exit code 2, no traceback."""


class OneLineParser(argparse.ArgumentParser):
    """Bad arguments are one line on stderr and exit code 2, like every other bad input here."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {one_line(message)} (see --help)\n")


def port(text: str) -> int:
    number = int(text)  # argparse turns the ValueError into "invalid port value"
    if not MIN_PORT <= number <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"a port is {MIN_PORT}..{MAX_PORT}, got {number}")
    return number


def retained_executions(text: str) -> int:
    number = int(text)  # argparse turns the ValueError into "invalid retained_executions value"
    if number < 0:
        raise argparse.ArgumentTypeError(f"the executions to keep are 0 or more, got {number}")
    return number


def seconds(text: str) -> float:
    value = float(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"seconds must be a positive number, got {text}")
    return value


def whole_seconds(text: str) -> int:
    value = int(text)  # argparse turns the ValueError into "invalid whole_seconds value"
    if value < 1:
        raise argparse.ArgumentTypeError(f"seconds must be a positive whole number, got {text}")
    return value


def positive_int(text: str) -> int:
    value = int(text)  # argparse turns the ValueError into "invalid positive_int value"
    if value < 1:
        raise argparse.ArgumentTypeError(f"a count is a positive whole number, got {text}")
    return value


def name_value(text: str) -> tuple[str, str]:
    name, separator, value = text.partition("=")
    if not (name and separator and value):
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def replay_hook(text: str) -> Any:
    """A JSON payload template (an object), or the text as given (a '{% ... %}' expression)."""
    stripped = text.strip()
    if not stripped.startswith("{%"):
        try:
            return json.loads(stripped)
        except json.JSONDecodeError as error:
            raise argparse.ArgumentTypeError(
                f"a replay hook is a JSON object or '{{% ... %}}': {error}"
            ) from None
    return text


def endpoint_url(text: str) -> str:
    parsed = urlsplit(text)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise argparse.ArgumentTypeError(f"an endpoint is http(s)://host[:port], got {text!r}")
    try:
        _ = parsed.port
    except ValueError:
        raise argparse.ArgumentTypeError(f"an endpoint is http(s)://host[:port], got {text!r}") from None
    return text


def host(text: str) -> str:
    """A host name (letters, digits, ``-`` and ``_``, dot-separated) or an IP address, as an
    endpoint URL carries it (IPv6 in brackets)."""
    bracketed = text.startswith("[") and text.endswith("]")
    try:
        address = ipaddress.ip_address(text[1:-1] if bracketed else text)
        if (address.version == 6) != bracketed:
            raise ValueError(text)
    except ValueError:
        if not HOST_NAME.fullmatch(text):
            raise argparse.ArgumentTypeError(f"a host is a name or an IP address, got {text!r}") from None
    return text


def is_loopback(host_name: str) -> bool:
    """Whether only this machine can reach ``host_name`` (a name other than localhost may not be)."""
    if host_name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host_name.strip("[]")).is_loopback
    except ValueError:
        return False


def idempotency_key(text: str) -> str:
    prefix, separator, digest = text.partition("#")
    if not (prefix.strip() and separator and digest.strip()) or text != text.strip():
        raise argparse.ArgumentTypeError(f"a key is <prefix>#<hash>, got {text!r}")
    return text


def add_endpoint_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--endpoint-url", type=endpoint_url, metavar="URL", help="e.g. the URL `sfn-idempotency serve` prints"
    )
    parser.add_argument(
        "--region", help="AWS region (default: the standard chain; us-east-1 with --endpoint-url)"
    )


def add_setting_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("configuration (overrides IDEMPOTENCY_* variables)")
    group.add_argument("--key-prefix")
    group.add_argument("--event-key-jmespath", metavar="EXPRESSION")
    group.add_argument("--payload-validation-jmespath", metavar="EXPRESSION")
    group.add_argument("--expires-after", metavar="SECONDS")
    group.add_argument("--timeout-seconds", metavar="SECONDS", help="business step timeout and lease")
    group.add_argument("--hash-function", metavar="NAME")


def add_access_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "who may call it (serve has no authentication: by default only its own console, and clients "
        "that send no Origin, such as the AWS CLI and SDKs, on a loopback host name)"
    )
    group.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="also answer web pages from ORIGIN (scheme://host[:port]); repeatable; "
        "SFN_IDEMPOTENCY_ALLOW_ORIGINS adds more (separated by commas or spaces)",
    )
    group.add_argument(
        "--allow-any-origin",
        action="store_true",
        help="answer every web page you open (unsafe: it warns at start)",
    )
    group.add_argument(
        "--allow-host",
        action="append",
        default=[],
        type=host,
        metavar="NAME",
        help="also answer requests for host NAME (a container's name, say); repeatable; "
        "SFN_IDEMPOTENCY_ALLOW_HOSTS adds more",
    )


def settings_from(arguments: argparse.Namespace) -> IdempotencySettings:
    overrides = {
        env: str(value)
        for flag, env in SETTING_FLAGS.items()
        if (value := getattr(arguments, flag)) is not None
    }
    return example_settings(**overrides)


def read_text(path: str, holds: str) -> str:
    """A file's UTF-8 text; a name no file can have (a NUL in it) is as unreadable as a missing one."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise CliError(f"cannot read {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise CliError(f"{path} is not UTF-8 text ({holds} is JSON)") from None
    except ValueError as error:  # "embedded null byte": found by hypothesis (wrap '\x00')
        raise CliError(f"cannot read {path!r}: {error}") from None


def read_json(value: str) -> Any:
    if value.startswith("@"):
        value = read_text(value[1:], "the input")
    try:
        return json.loads(value)
    except json.JSONDecodeError as error:
        raise CliError(f"input is not valid JSON: {error}") from None


def aws_client(service: str, arguments: argparse.Namespace) -> Any:
    return client(service, arguments.endpoint_url, arguments.region)


def one_line_warning(message: Warning | str, *_: object, **__: object) -> None:
    """A warning while serving (a function declared for another Node, say), in one line on stderr."""
    print(f"sfn-idempotency: warning: {message}", file=sys.stderr, flush=True)


def record_key(arguments: argparse.Namespace) -> str:
    if arguments.key:
        return str(arguments.key)
    settings = settings_from(arguments)
    key: str | None = key_of(read_json(arguments.input), settings)
    if key is None:
        raise CliError(f"the event has no idempotency key (JMESPath {settings.event_key_jmespath!r})")
    return key


def records_table(arguments: argparse.Namespace, dynamodb: Any) -> str:
    return str(arguments.table or only_table(dynamodb))


def one_line(message: str) -> str:
    """Bad input is one line, even when it quotes what it was given (a file name with a newline)."""
    return message.replace("\r", "\\r").replace("\n", "\\n")


def add_record_parser(commands: Any, name: str, summary: str, detail: str) -> argparse.ArgumentParser:
    """``record`` and ``forget``: the event or key whose record it is, the table, where, the settings."""
    command: argparse.ArgumentParser = commands.add_parser(
        name,
        help=summary,
        description=f"{detail} With --input the key is computed exactly as the key Lambda computes it, "
        "from the same settings (flags, then IDEMPOTENCY_* variables, then the example configuration).",
    )
    target = command.add_mutually_exclusive_group(required=True)
    target.add_argument("--input", metavar="JSON|@FILE", help="the event whose record to use")
    target.add_argument("--key", type=idempotency_key, help="the idempotency key itself (<prefix>#<hash>)")
    command.add_argument("--table", help="default: the only table there is")
    add_endpoint_flags(command)
    add_setting_flags(command)
    return command
