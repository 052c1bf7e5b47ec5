"""The MCP server's HTTP front door: the address it listens on, who may talk to it, and the
line it prints when it starts (``locimem mcp STORE --http HOST:PORT``).

- **Address.** ``HOST:PORT``: a host name or an IPv4 address, or an IPv6 address in brackets
  (``[::1]:8765``); port 0 picks a free port (:func:`parse_address`).
- **Loopback unless told.** A host other than loopback (127.0.0.0/8, ::1, ``localhost``) is
  refused unless ``allow_remote`` (``--allow-remote``), and remote serving needs a bearer
  token (:func:`check_bind`).
- **Token.** With a token (``--token-file``; on loopback too), every HTTP request must carry
  ``Authorization: Bearer <token>``, compared in constant time, or it is answered 401
  (:class:`BearerGate`).
- **Host and Origin.** The SDK's DNS-rebinding protection stays on: a request whose ``Host``
  is not a name of the bound address (:func:`allowed_hosts`: for loopback ``127.0.0.1``,
  ``localhost`` and ``[::1]``, with the port) or one given with ``--allowed-host`` is
  answered 421, a foreign ``Origin`` 403.

Pure functions but :func:`read_token_file`, :func:`token_file_warning` and
:func:`listen_socket`; nothing here prints.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import re
import socket
import stat
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from locimem.errors import InvalidInput, LocimemError
from locimem.files import open_regular

__all__ = [
    "BearerGate",
    "allowed_hosts",
    "allowed_origins",
    "check_bind",
    "check_token",
    "is_loopback",
    "is_wildcard",
    "listen_socket",
    "parse_address",
    "parse_allowed_host",
    "read_token_file",
    "startup_line",
    "token_file_warning",
    "url_of",
]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
MCP_PATH = "/mcp"
EXAMPLE = (
    "expected HOST:PORT, e.g. 127.0.0.1:8765 (an IPv6 address in brackets: [::1]:8765; "
    "port 0: any free port)"
)
UNAUTHORIZED_BODY = b"401 Unauthorized: send Authorization: Bearer <token>\n"
_NAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$"
)
_PORT = re.compile(r"^[0-9]{1,5}$")
_TOKEN = re.compile(r"^[\x21-\x7e]+$")  # visible ASCII: what a header can carry unchanged

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


# -- addresses ----------------------------------------------------------------------------------
def parse_address(text: str, what: str = "address") -> tuple[str, int]:
    """``HOST:PORT`` as ``(host, port)``; an IPv6 host comes without its brackets. Raises
    :class:`~locimem.errors.InvalidInput` naming ``what``, what came and what is expected.

    >>> parse_address("127.0.0.1:8765"), parse_address("[::1]:0"), parse_address("robot:80")
    (('127.0.0.1', 8765), ('::1', 0), ('robot', 80))
    >>> parse_address("::1:8765", what="--http")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    locimem.errors.InvalidInput: --http '::1:8765': an IPv6 address goes in brackets, e.g. ...
    """
    if not isinstance(text, str):
        raise InvalidInput(f"{what} must be a string HOST:PORT, got {type(text).__name__}")
    s = text.strip()
    if s.startswith("["):
        close = s.find("]")
        if close < 0 or s[close + 1 : close + 2] != ":":
            raise InvalidInput(f"{what} {text!r}: {EXAMPLE}")
        host, port = s[1:close], s[close + 2 :]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise InvalidInput(
                f"{what} {text!r}: {host!r} in brackets is not an IPv6 address"
            ) from None
    else:
        host, sep, port = s.rpartition(":")
        if not sep or not host:
            raise InvalidInput(f"{what} {text!r}: {EXAMPLE}")
        if ":" in host:
            raise InvalidInput(
                f"{what} {text!r}: an IPv6 address goes in brackets, e.g. [::1]:8765"
            )
        if not _NAME.match(host):
            raise InvalidInput(
                f"{what} {text!r}: {host!r} is not a host name or an IPv4 address; {EXAMPLE}"
            )
    if not _PORT.match(port) or int(port) > 65535:
        raise InvalidInput(
            f"{what} {text!r}: the port must be a number from 0 to 65535 (0: any free port)"
        )
    return host, int(port)


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (127.0.0.0/8, ::1, an IPv4-mapped 127.x) or
    ``localhost``. Other names are not resolved: a name could point anywhere tomorrow.

    >>> is_loopback("127.0.0.2"), is_loopback("::1"), is_loopback("localhost")
    (True, True, True)
    >>> is_loopback("0.0.0.0"), is_loopback("192.168.1.5"), is_loopback("robot.local")
    (False, False, False)
    """
    if host.lower().rstrip(".") == "localhost":
        return True
    addr = _address(host)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr is not None and addr.is_loopback


def is_wildcard(host: str) -> bool:
    """Whether ``host`` is an address that listens on every interface (``0.0.0.0``, ``::``).

    >>> is_wildcard("0.0.0.0"), is_wildcard("::"), is_wildcard("127.0.0.1")
    (True, True, False)
    """
    addr = _address(host)
    return addr is not None and addr.is_unspecified


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def url_of(host: str, port: int) -> str:
    """The URL the server answers at.

    >>> url_of("::1", 8765), url_of("127.0.0.1", 80)
    ('http://[::1]:8765/mcp', 'http://127.0.0.1:80/mcp')
    """
    return f"http://{_bracketed(host)}:{port}{MCP_PATH}"


def check_token(token: Any) -> str:
    """A bearer token as the server compares it: visible ASCII without spaces (what a client
    can send in a header unchanged)."""
    if not isinstance(token, str) or not token:
        raise InvalidInput("the bearer token must be a non-empty string")
    if not _TOKEN.match(token):
        raise InvalidInput(
            "the bearer token must be visible ASCII characters without spaces "
            "(e.g. made by `openssl rand -hex 32`)"
        )
    return token


def check_bind(
    host: str, *, allow_remote: bool, token: str | None, allowed_hosts: Iterable[str] = ()
) -> None:
    """Refuse to listen beyond this machine unless told to, and then only with a token; check
    the token and the ``--allowed-host`` names.

    >>> check_bind("127.0.0.1", allow_remote=False, token=None)
    >>> check_bind("0.0.0.0", allow_remote=False, token=None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    locimem.errors.InvalidInput: 0.0.0.0 is not a loopback address (127.0.0.1, ::1, localhost), ...
    """
    if token is not None:
        check_token(token)
    if not is_loopback(host) and not allow_remote:
        raise InvalidInput(
            f"{host} is not a loopback address (127.0.0.1, ::1, localhost), so other machines "
            "could reach the server: pass allow_remote=True (--allow-remote) and a bearer "
            "token (--token-file PATH) to allow that, or listen on 127.0.0.1"
        )
    if allow_remote and token is None:
        raise InvalidInput(
            "allow_remote=True (--allow-remote) needs a bearer token (--token-file PATH): a "
            "server other machines can reach must check who is calling"
        )
    for name in allowed_hosts:
        parse_allowed_host(name, 0)


# -- the token file -----------------------------------------------------------------------------
def read_token_file(path: str | os.PathLike[str]) -> str:
    """The bearer token held in the file at ``path`` (surrounding blanks, such as the final
    newline, dropped). Raises :class:`~locimem.errors.InvalidInput` for a missing, unreadable
    or empty file, or a token a header cannot carry."""
    shown = os.fspath(path)
    make = f"e.g. `openssl rand -hex 32 > {shown} && chmod 600 {shown}`"
    try:
        with open_regular(path, "the token file", "expected a file holding the bearer token "
                          f"({make})") as f:
            raw = f.read(65537)
    except FileNotFoundError:
        raise InvalidInput(
            f"no token file at {shown!r}: --token-file names a file holding "
            f"the bearer token ({make})"
        ) from None
    except OSError as exc:
        raise InvalidInput(f"cannot read the token file {shown!r}: {exc.strerror or exc}") from None
    if len(raw) > 65536:
        raise InvalidInput(
            f"the token file {shown!r} is larger than 64 KiB; it should hold one bearer token"
        )
    try:
        token = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        token = "\x00"  # refused below, with the message for it
    if not token:
        raise InvalidInput(
            f"the token file {shown!r} is empty: put the bearer token in it ({make})"
        )
    try:
        return check_token(token)
    except InvalidInput as exc:
        raise InvalidInput(f"the token file {shown!r}: {exc}") from None


def token_file_warning(path: str | os.PathLike[str]) -> str | None:
    """A warning when the token file can be read by its group or by others (POSIX), else
    None."""
    if os.name != "posix":
        return None
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None
    if not mode & (stat.S_IRGRP | stat.S_IROTH):
        return None
    who = " and ".join(
        w for w, bit in (("its group", stat.S_IRGRP), ("others", stat.S_IROTH)) if mode & bit
    )
    shown = os.fspath(path)
    return f"the token file {shown} can be read by {who} (mode {mode:04o}): chmod 600 {shown}"


# -- who may call -------------------------------------------------------------------------------
def parse_allowed_host(text: str, port: int) -> list[str]:
    """``--allowed-host NAME[:PORT]`` as the ``Host`` header values it allows: ``NAME:PORT``
    (``port``, the server's, when none is given), and the bare name too for ports 80 and 443
    (where clients leave the port out). An IPv6 address goes in brackets.

    >>> parse_allowed_host("robot.local", 8765), parse_allowed_host("[fd00::5]:443", 8765)
    (['robot.local:8765'], ['[fd00::5]:443', '[fd00::5]'])
    """
    s = text.strip() if isinstance(text, str) else ""
    if _NAME.match(s):
        name, given = s, port
    elif s.startswith("[") and s.endswith("]") and _address(s[1:-1]) is not None:
        name, given = s[1:-1], port
    else:
        try:
            name, given = parse_address(s)
        except InvalidInput:
            raise InvalidInput(
                f"--allowed-host {text!r}: expected NAME[:PORT], e.g. robot.local or "
                "192.168.1.5:8765 (an IPv6 address in brackets: [fd00::5])"
            ) from None
    return _with_port(_bracketed(name), given)


def _with_port(host: str, port: int) -> list[str]:
    return [f"{host}:{port}", host] if port in (80, 443) else [f"{host}:{port}"]


def allowed_hosts(host: str, port: int, extra: Iterable[str] = ()) -> list[str]:
    """The ``Host`` header values the server accepts when it listens on ``host:port`` (the
    actual port): for a loopback or wildcard address the loopback names with the port, for any
    other the address itself (each also without the port on ports 80 and 443, where clients
    leave it out); then each ``extra`` (``--allowed-host NAME[:PORT]``).

    >>> allowed_hosts("127.0.0.1", 8765)
    ['127.0.0.1:8765', 'localhost:8765', '[::1]:8765']
    >>> allowed_hosts("192.168.1.5", 8765, ["robot.local"])
    ['192.168.1.5:8765', 'robot.local:8765']
    """
    names = [] if is_wildcard(host) else [_bracketed(host)]
    if is_loopback(host) or is_wildcard(host):
        names = [*LOOPBACK_NAMES, *names]
    out = [h for n in names for h in _with_port(n, port)]
    for text in extra:
        out.extend(parse_allowed_host(text, port))
    return list(dict.fromkeys(out))


def allowed_origins(hosts: Iterable[str]) -> list[str]:
    """The ``Origin`` values accepted: each allowed host over http and https.

    >>> allowed_origins(["localhost:8765"])
    ['http://localhost:8765', 'https://localhost:8765']
    """
    return [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]


class BearerGate:
    """An ASGI middleware that lets a request through only with ``Authorization: Bearer
    <token>`` (compared in constant time); anything else gets 401 and a one-line body. The
    server's lifespan passes untouched."""

    def __init__(self, app: App, token: str) -> None:
        self.app = app
        self._expected = check_token(token).encode("ascii")

    def authorised(self, headers: Iterable[tuple[bytes, bytes]]) -> bool:
        given = next((v for k, v in headers if k.lower() == b"authorization"), b"")
        scheme, _, credential = given.strip().partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(
            credential.strip(), self._expected
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" or self.authorised(scope.get("headers") or ()):
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(UNAUTHORIZED_BODY)).encode()),
                    (b"www-authenticate", b'Bearer realm="locimem"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": UNAUTHORIZED_BODY})


# -- listening ----------------------------------------------------------------------------------
def listen_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (port 0: a free one), not yet listening. Raises
    :class:`~locimem.errors.LocimemError` when the address cannot be had (in use, not this
    machine's, a name that does not resolve)."""
    shown = f"{_bracketed(host)}:{port}"
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise LocimemError(f"cannot listen on {shown}: {exc.strerror}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
    except OSError as exc:
        sock.close()
        raise LocimemError(f"cannot listen on {shown}: {exc.strerror or exc}") from None
    return sock


def startup_line(url: str, *, allow_writes: bool, token: bool) -> str:
    """The one line the command prints once the server listens.

    >>> startup_line("http://127.0.0.1:8765/mcp", allow_writes=False, token=True)
    'locimem mcp: serving http://127.0.0.1:8765/mcp (read-only; a bearer token is required)'
    """
    writes = "writes allowed" if allow_writes else "read-only"
    auth = "a bearer token is required" if token else "no token required"
    return f"locimem mcp: serving {url} ({writes}; {auth})"
