"""Who may talk to `kernel-mcp serve --http`: a client can run the workspace's commands, so the
server wants a bearer token and checks the Host and Origin headers.

Both checks are the MCP SDK's own: the token goes through its bearer middleware with a
`TokenVerifier` (this server is its own issuer; no OAuth routes are served), and Host/Origin
through its `TransportSecuritySettings` (the DNS-rebinding guard, which the SDK turns on by itself
only for the loopback names). Loopback needs the token too: on a shared GPU node every local user
can reach 127.0.0.1. `--no-token` serves loopback without one, for a machine of one user.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path

import psutil
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl

from kernel_mcp.errors import InvalidInput

TOKEN_ENV = "KERNEL_MCP_HTTP_TOKEN"
MIN_TOKEN_CHARS = 16  # a short token is guessable over the network
LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


class StaticToken:
    """A TokenVerifier for the one token the user gave or the server printed."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode(), self._token):  # constant time: no timing oracle
            return AccessToken(token=token, client_id="kernel-mcp-user", scopes=[])
        return None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    return host in ("", "0.0.0.0", "::")


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def machine_names() -> list[str]:
    """This machine's addresses and names: what a client may put in Host when the bind is a wildcard."""
    names = {socket.gethostname(), socket.getfqdn()}
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family in (socket.AF_INET, socket.AF_INET6):
                names.add(address.address.split("%", 1)[0])  # an IPv6 zone is not part of a Host header
    return sorted(n for n in names if n)


def _host_entries(value: str, port: int) -> list[str]:
    """A user's --allow-host: 'name' allows it on the served port and bare (a proxy on 80/443);
    'name:port' or 'name:*' as given."""
    if value.startswith("["):
        has_port = "]:" in value
    else:
        has_port = value.count(":") == 1
    return [value] if has_port else [f"{_bracketed(value)}:{port}", _bracketed(value)]


@dataclass
class HttpPolicy:
    url: str
    token: str | None
    generated: bool
    transport_security: TransportSecuritySettings

    def auth(self) -> tuple[AuthSettings | None, StaticToken | None]:
        """The SDK's auth settings and verifier for `MCPServer`; none when no token is required."""
        if self.token is None:
            return None, None
        return AuthSettings(issuer_url=AnyHttpUrl(self.url), resource_server_url=None), StaticToken(self.token)


def read_token(token_file: str | None) -> str | None:
    if token_file:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise InvalidInput(f"cannot read the token file {token_file}: {exc.strerror or exc}") from exc
    else:
        token = os.environ.get(TOKEN_ENV, "").strip()
    if token and len(token) < MIN_TOKEN_CHARS:
        raise InvalidInput(f"the bearer token is too short ({len(token)} characters)", hint=f"use at least {MIN_TOKEN_CHARS}, e.g. a generated one")
    return token or None


def policy(
    host: str,
    port: int,
    token: str | None,
    allow_hosts: list[str] | None = None,
    allow_origins: list[str] | None = None,
    no_token: bool = False,
) -> HttpPolicy:
    """Token and header allowlist for serving on host:port; a token is generated when none is given,
    unless `no_token` (loopback only) serves without one."""
    generated = False
    if no_token:
        if not is_loopback(host):
            raise InvalidInput(
                f"--no-token serves loopback only, not {host}: any machine that reaches it could run the workspace's commands",
                hint="bind 127.0.0.1, or drop --no-token and send the token",
            )
        if token is not None:
            raise InvalidInput("--no-token and a token (--token-file or $" + TOKEN_ENV + ") contradict each other", hint="give one of them")
    elif token is None:
        token, generated = secrets.token_urlsafe(32), True
    if is_wildcard(host):
        names = machine_names()
    else:
        names = [host]
    hosts = [f"{_bracketed(n)}:{port}" for n in names]
    if is_loopback(host) or is_wildcard(host):
        hosts += LOOPBACK_HOSTS
    origins = [f"http://{h}" for h in hosts]
    for value in allow_hosts or []:
        added = _host_entries(value, port)
        hosts += added
        origins += [f"{scheme}://{h}" for h in added for scheme in ("http", "https")]  # https: behind a TLS proxy
    origins += list(allow_origins or [])
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=list(dict.fromkeys(hosts)), allowed_origins=list(dict.fromkeys(origins))
    )
    url_host = "127.0.0.1" if is_wildcard(host) else _bracketed(host)
    return HttpPolicy(url=f"http://{url_host}:{port}", token=token, generated=generated, transport_security=security)
