"""The MCP server over HTTP as a user starts it (``python -m locimem mcp STORE --http ...``):
loopback unless ``--allow-remote``, which needs ``--token-file``; the bearer token on every
request; the SDK's Host/Origin check with ``--allowed-host``; IPv6 loopback in brackets; one
startup line; clear errors for a bad address. The servers and the refused commands start
together, once for the module (each start takes about a second)."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from locimem import ObjectMemory
from tests.agent.test_agent_tools import build_home

mcp = pytest.importorskip("mcp")
anyio = pytest.importorskip("anyio")
httpx2 = pytest.importorskip("httpx2")

from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from locimem.cli import main  # noqa: E402

TOKEN = "0123456789abcdef-test-token"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
UNAUTHORIZED = "401 Unauthorized: send Authorization: Bearer <token>\n"
STARTED = re.compile(r"^locimem mcp: serving (http://\S+/mcp) \((.*)\)$")


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


IPV6 = _ipv6_loopback()


def _mcp(*args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "locimem", "mcp", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


class Started:
    """A server process and the stderr lines it printed up to its startup line."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self.url = ""
        self.what = ""

    def wait(self) -> Started:
        while not self.url:
            line = self.proc.stderr.readline()  # type: ignore[union-attr]
            assert line, f"the server exited: {''.join(self.lines)}"
            self.lines.append(line.rstrip("\n"))
            found = STARTED.match(self.lines[-1])
            if found:
                self.url, self.what = found[1], found[2]
        return self


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("mcp-http")
    store = d / "home.loci"
    build_home(ObjectMemory.open(store, scope="home")).close()
    token = d / "token"
    token.write_text(TOKEN + "\n")
    token.chmod(0o640)  # readable by the group: a warning, not a refusal
    procs = {
        "token": _mcp(
            store, "--http", "127.0.0.1:0", "--token-file", token, "--allowed-host", "robot.local"
        ),
        "remote": _mcp(store, "--http", "0.0.0.0:0"),
        "remote without a token": _mcp(store, "--http", "0.0.0.0:0", "--allow-remote"),
    }
    if IPV6:
        procs["ipv6"] = _mcp(store, "--http", "[::1]:0", "--allow-writes")
    yield {name: Started(p) for name, p in procs.items()}, token
    for p in procs.values():
        p.terminate()
    for p in procs.values():
        p.communicate(timeout=10)


def _post(url: str, headers: dict[str, str], body: object = INITIALIZE) -> tuple[int, str]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=20) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _refused(server: Started) -> tuple[int, str, str]:
    out, err = server.proc.communicate(timeout=30)  # a server that started would not exit
    return server.proc.returncode, out, err


def test_a_non_loopback_address_is_refused_without_allow_remote(started):
    servers, _ = started
    assert _refused(servers["remote"]) == (
        2,
        "",
        (
            "error: 0.0.0.0 is not a loopback address (127.0.0.1, ::1, localhost), so other "
            "machines could reach the server: pass --allow-remote and a bearer token "
            "(--token-file PATH) to allow that, or listen on 127.0.0.1\n"
        ),
    )


def test_allow_remote_needs_a_token_file(started):
    servers, _ = started
    assert _refused(servers["remote without a token"]) == (
        2,
        "",
        (
            "error: --allow-remote needs a bearer token (--token-file PATH): a server other "
            "machines can reach must check who is calling\n"
        ),
    )


def test_the_startup_line_and_the_token_file_warning(started):
    servers, token = started
    server = servers["token"].wait()
    port = int(server.url.split(":")[-1].removesuffix("/mcp"))
    assert port > 0  # port 0 asked for a free one; the line says which
    assert server.url == f"http://127.0.0.1:{port}/mcp"
    assert server.what == "read-only; a bearer token is required"
    assert server.lines == [
        f"warning: the token file {token} can be read by its group (mode 0640): chmod 600 {token}",
        f"locimem mcp: serving {server.url} (read-only; a bearer token is required)",
    ]


def test_every_request_needs_the_bearer_token(started):
    url = started[0]["token"].wait().url
    assert _post(url, {}) == (401, UNAUTHORIZED)
    assert _post(url, {"Authorization": "Bearer wrong-token"}) == (401, UNAUTHORIZED)
    assert _post(url, {"Authorization": f"Basic {TOKEN}"}) == (401, UNAUTHORIZED)
    assert _post(url, {"Authorization": f"Bearer {TOKEN}x"}) == (401, UNAUTHORIZED)
    status, body = _post(url, {"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and '"serverInfo":{"name":"locimem"' in body

    async def session():
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
            Client(
                streamable_http_client(url, http_client=http), read_timeout_seconds=30
            ) as client,
        ):
            names = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("where_is", {"name": "cup"})
            return names, result.structured_content["cite"]

    names, cite = anyio.run(session)
    assert "where_is" in names and "forget_object" not in names
    assert cite == [1, 2]


def test_a_foreign_host_or_origin_is_refused(started):
    url = started[0]["token"].wait().url
    port = url.split(":")[-1].removesuffix("/mcp")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert _post(url, {**auth, "Host": f"evil.example:{port}"}) == (421, "Invalid Host header")
    assert _post(url, {**auth, "Host": "robot.local:1"}) == (421, "Invalid Host header")
    assert _post(url, {**auth, "Origin": "http://evil.example"}) == (403, "Invalid Origin header")
    assert _post(url, {"Host": f"evil.example:{port}"}) == (401, UNAUTHORIZED)  # token first
    for host in (f"localhost:{port}", f"robot.local:{port}"):  # --allowed-host robot.local
        status, body = _post(url, {**auth, "Host": host, "Origin": f"http://{host}"})
        assert status == 200 and '"serverInfo":{"name":"locimem"' in body, host


@pytest.mark.skipif(not IPV6, reason="this machine has no IPv6 loopback")
def test_an_ipv6_loopback_address_in_brackets(started):
    server = started[0]["ipv6"].wait()
    assert re.fullmatch(r"http://\[::1\]:[1-9][0-9]*/mcp", server.url)
    assert server.what == "writes allowed; no token required"

    async def session():
        async with Client(server.url, read_timeout_seconds=30) as client:
            return [t.name for t in (await client.list_tools()).tools]

    assert "forget_object" in anyio.run(session)


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        (
            "127.0.0.1",
            "expected HOST:PORT, e.g. 127.0.0.1:8765 (an IPv6 address in brackets: "
            "[::1]:8765; port 0: any free port)",
        ),
        (
            ":8765",
            "expected HOST:PORT, e.g. 127.0.0.1:8765 (an IPv6 address in brackets: "
            "[::1]:8765; port 0: any free port)",
        ),
        (
            "[::1]",
            "expected HOST:PORT, e.g. 127.0.0.1:8765 (an IPv6 address in brackets: "
            "[::1]:8765; port 0: any free port)",
        ),
        ("::1:8765", "an IPv6 address goes in brackets, e.g. [::1]:8765"),
        ("[localhost]:8765", "'localhost' in brackets is not an IPv6 address"),
        ("127.0.0.1:65536", "the port must be a number from 0 to 65535 (0: any free port)"),
        ("127.0.0.1:http", "the port must be a number from 0 to 65535 (0: any free port)"),
        (
            "my robot:8765",
            "'my robot' is not a host name or an IPv4 address; expected HOST:PORT, "
            "e.g. 127.0.0.1:8765 (an IPv6 address in brackets: [::1]:8765; port 0: "
            "any free port)",
        ),
    ],
)
def test_a_bad_address_is_a_clear_error(tmp_path: Path, capsys, address: str, problem: str):
    assert main(["mcp", str(tmp_path / "none.loci"), "--http", address]) == 2
    assert capsys.readouterr().err == f"error: --http {address!r}: {problem}\n"


def test_token_file_and_allowed_host_problems_and_http_flags_without_http(tmp_path: Path, capsys):
    store = str(tmp_path / "none.loci")
    missing = tmp_path / "token"
    assert main(["mcp", store, "--http", "127.0.0.1:0", "--token-file", str(missing)]) == 2
    assert capsys.readouterr().err == (
        f"error: no token file at {str(missing)!r}: --token-file names a file holding the "
        f"bearer token (e.g. `openssl rand -hex 32 > {missing} && chmod 600 {missing}`)\n"
    )
    missing.write_text("\n")
    assert main(["mcp", store, "--http", "127.0.0.1:0", "--token-file", str(missing)]) == 2
    assert capsys.readouterr().err == (
        f"error: the token file {str(missing)!r} is empty: put the bearer token in it (e.g. "
        f"`openssl rand -hex 32 > {missing} && chmod 600 {missing}`)\n"
    )
    assert main(["mcp", store, "--token-file", str(missing), "--allowed-host", "robot"]) == 2
    assert capsys.readouterr().err == (
        "error: --token-file, --allowed-host apply only to the HTTP server: add --http "
        "HOST:PORT (over stdio the client starts the server itself)\n"
    )
    assert main(["mcp", store, "--http", "127.0.0.1:0", "--allowed-host", "my robot"]) == 2
    assert capsys.readouterr().err == (
        "error: --allowed-host 'my robot': expected NAME[:PORT], e.g. robot.local or "
        "192.168.1.5:8765 (an IPv6 address in brackets: [fd00::5])\n"
    )
