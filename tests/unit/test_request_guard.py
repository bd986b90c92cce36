"""The access policy in front of `serve` (issue 27): which Host names and origins it answers."""

from __future__ import annotations

import pytest

from sfn_idempotency.local.http.request_guard import AccessPolicy, BadOriginError, parse_origin, split_list

PORT = 8083
DEFAULT = AccessPolicy.build("127.0.0.1", [PORT])


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:8083",
        "localhost:8083",
        "LOCALHOST:8083",
        "localhost.:8083",
        "[::1]:8083",
        "127.0.0.2:8083",  # the whole loopback range
        "app.localhost:8083",  # *.localhost is loopback by definition (RFC 6761)
        "127.0.0.1",
        "localhost:9999",  # a port mapped to this one
    ],
)
def test_loopback_host_names_are_answered(host: str):
    assert DEFAULT.refusal({"host": host}) is None


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:8083",
        "localhost.evil.example:8083",
        "127.0.0.1.nip.io:8083",
        "192.168.1.5:8083",
        "",
        "[::2]:8083",
    ],
)
def test_other_host_names_are_refused(host: str):
    refusal = DEFAULT.refusal({"host": host})
    assert refusal is not None
    assert refusal.status == 403
    assert "--allow-host" in refusal.message


def test_the_listen_host_and_allowed_hosts_are_answered_and_nothing_else():
    policy = AccessPolicy.build("0.0.0.0", [PORT], hosts=["devbox", "Build_Agent"])
    assert policy.refusal({"host": "0.0.0.0:8083"}) is None
    assert policy.refusal({"host": "devbox:8083"}) is None
    assert policy.refusal({"host": "build_agent"}) is None
    assert policy.refusal({"host": "devbox2:8083"}) is not None


@pytest.mark.parametrize(
    "origin",
    ["http://127.0.0.1:8083", "http://localhost:8083", "http://[::1]:8083", "HTTP://LOCALHOST:8083"],
)
def test_the_consoles_own_origins_are_answered(origin: str):
    assert DEFAULT.refusal({"host": "127.0.0.1:8083", "origin": origin}) is None


@pytest.mark.parametrize(
    "origin",
    [
        "http://127.0.0.1:8084",  # another port is another origin
        "https://127.0.0.1:8083",
        "http://localhost",
        "http://evil.example",
        "null",  # a sandboxed frame, a file:// page
        "garbage",
    ],
)
def test_other_origins_are_refused_with_the_flag_that_allows_them(origin: str):
    refusal = DEFAULT.refusal({"host": "127.0.0.1:8083", "origin": origin})
    assert refusal is not None
    assert f"'{origin}'" in refusal.message
    assert f"--allow-origin {origin}" in refusal.message


def test_a_referer_stands_for_a_missing_origin():
    own = {"host": "localhost:8083", "referer": "http://localhost:8083/#/executions"}
    foreign = {"host": "localhost:8083", "referer": "http://evil.example/page?x=1"}
    assert DEFAULT.refusal(own) is None
    refusal = DEFAULT.refusal(foreign)
    assert refusal is not None
    assert "'http://evil.example'" in refusal.message


def test_origin_wins_over_referer():
    headers = {"host": "localhost:8083", "origin": "http://evil.example", "referer": "http://localhost:8083/"}
    assert DEFAULT.refusal(headers) is not None


@pytest.mark.parametrize(
    ("site", "refused"), [("cross-site", True), ("same-site", True), ("same-origin", False), ("none", False)]
)
def test_a_page_that_hides_its_origin_is_known_by_fetch_metadata(site: str, refused: bool):
    assert (DEFAULT.refusal({"host": "localhost:8083", "sec-fetch-site": site}) is not None) is refused


def test_clients_that_send_no_origin_are_answered():
    # The AWS CLI and SDKs send Host and nothing of the three
    assert DEFAULT.refusal({"host": "127.0.0.1:8083", "user-agent": "aws-cli/2"}) is None


def test_allowed_origins_are_compared_as_origins():
    policy = AccessPolicy.build("127.0.0.1", [PORT], origins=["http://LOCALHOST:3000/", "https://app.test"])
    host = {"host": "localhost:8083"}
    assert policy.refusal({**host, "origin": "http://localhost:3000"}) is None
    assert policy.refusal({**host, "origin": "https://app.test:443"}) is None
    assert policy.refusal({**host, "origin": "http://app.test"}) is not None
    assert policy.refusal({**host, "origin": "http://localhost:3001"}) is not None


def test_any_origin_admits_every_origin_but_not_a_foreign_host():
    policy = AccessPolicy.build("127.0.0.1", [PORT], any_origin=True)
    assert policy.refusal({"host": "localhost:8083", "origin": "http://evil.example"}) is None
    assert policy.refusal({"host": "localhost:8083", "sec-fetch-site": "cross-site"}) is None
    assert policy.refusal({"host": "evil.example:8083", "origin": "http://evil.example"}) is not None


def test_without_a_console_no_origin_is_anyones_own():
    # The in-process engine's loopback servers (the HTTP front door in a test) serve no page
    assert AccessPolicy().refusal({"host": "127.0.0.1:5000", "origin": "http://127.0.0.1:5000"}) is not None


@pytest.mark.parametrize(
    "text",
    [
        "localhost:3000",
        "http://localhost:3000/app",
        "http://localhost:3000?x",
        "ftp://x",
        "http://u@x",
        "http://x:port",
    ],
)
def test_what_is_not_an_origin_cannot_be_allowed(text: str):
    with pytest.raises(BadOriginError):
        parse_origin(text)


def test_the_refusal_is_an_aws_shaped_json_error():
    refusal = DEFAULT.refusal({"host": "evil.example"})
    assert refusal is not None
    assert dict(refusal.headers)["x-amzn-ErrorType"] == "AccessDeniedException"
    assert refusal.body.startswith(b'{"__type": "AccessDeniedException", "message": ')


def test_the_variable_lists_origins_separated_by_commas_or_spaces():
    assert split_list(" http://a:1, http://b:2 http://c:3,,") == ["http://a:1", "http://b:2", "http://c:3"]
    assert split_list(None) == []
