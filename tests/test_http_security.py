"""`kernel-mcp serve --http`: a bearer token and a Host/Origin allowlist, checked on the real server
with raw requests and with the SDK's streamable HTTP client; loopback needs the token too, unless
`--no-token` is given."""

from __future__ import annotations

import os
import socket
import subprocess
from contextlib import asynccontextmanager

import anyio
import httpx2
import psutil
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from conftest import PY, text_of

pytestmark = pytest.mark.anyio

TOKEN = "a-test-token-of-enough-length-0123456789"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def own_address() -> str | None:
    """A non-loopback IPv4 address of this machine, if it has one: the only kind we contact."""
    for addresses in psutil.net_if_addrs().values():
        for a in addresses:
            if a.family == socket.AF_INET and not a.address.startswith("127."):
                return a.address
    return None


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@asynccontextmanager
async def served(workspace, bind: str, env_token: str | None, *extra: str):
    port = free_port("0.0.0.0" if bind == "0.0.0.0" else bind)
    env = {k: v for k, v in os.environ.items() if k != "KERNEL_MCP_HTTP_TOKEN"}
    if env_token:
        env["KERNEL_MCP_HTTP_TOKEN"] = env_token
    proc = subprocess.Popen(
        [PY, "-m", "kernel_mcp", "serve", "--workspace", str(workspace), "--http", f"{bind}:{port}", *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    connect = "127.0.0.1" if bind == "0.0.0.0" else bind
    try:
        with anyio.fail_after(30):
            while True:
                with socket.socket() as s:
                    if s.connect_ex((connect, port)) == 0:
                        break
                assert proc.poll() is None, proc.stderr.read()
                await anyio.sleep(0.1)
        yield proc, connect, port
    finally:
        proc.terminate()
        proc.wait(10)


def post(url: str, headers: dict[str, str]) -> httpx2.Response:
    return httpx2.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=30)


async def round_trip(url: str, headers: dict[str, str]) -> str:
    async with create_mcp_http_client(headers=headers) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            return text_of(await client.call_tool("workspace_info", {}))


@pytest.fixture(params=["own-address", "wildcard"])
def bind(request) -> str:
    if request.param == "own-address":
        address = own_address()
        if address is None:
            pytest.skip("this machine has no non-loopback address")
        return address
    return "0.0.0.0"


async def test_beyond_loopback_needs_the_token_and_an_allowed_host_and_origin(workspace, bind):
    async with served(workspace, bind, TOKEN) as (_proc, connect, port):
        url = f"http://{connect}:{port}/mcp"
        host = f"{connect}:{port}"
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert post(url, {}).status_code == 401
        assert post(url, {"Authorization": "Bearer wrong-token-of-enough-length"}).status_code == 401
        assert post(url, {"Host": f"evil.example:{port}"}).status_code in (401, 403, 421)
        assert post(url, {**auth, "Host": f"evil.example:{port}"}).status_code in (403, 421)
        assert post(url, {**auth, "Origin": "http://evil.example"}).status_code == 403
        assert post(url, {**auth, "Host": host, "Origin": f"http://{host}"}).status_code == 200
        assert "target gfx950" in await round_trip(url, auth)
        with pytest.raises(ExceptionGroup) as refused:  # the client's task groups wrap the server's refusal
            await round_trip(url, {})
        assert refused.group_contains(MCPError, match="error response")


async def test_a_generated_token_is_printed_once_and_works(workspace):
    address = own_address() or "0.0.0.0"
    async with served(workspace, address, None) as (proc, connect, port):
        url = f"http://{connect}:{port}/mcp"
        assert post(url, {}).status_code == 401
        proc.terminate()
        proc.wait(10)
        printed = [line for line in proc.stderr.read().splitlines() if "bearer token" in line]
    assert len(printed) == 1
    token = printed[0].rsplit(" ", 1)[1]
    assert len(token) >= 32
    async with served(workspace, address, token) as (_proc, connect, port):
        assert "target gfx950" in await round_trip(f"http://{connect}:{port}/mcp", {"Authorization": f"Bearer {token}"})


async def test_allow_host_and_origin_options_add_to_the_allowlist(workspace):
    async with served(workspace, "0.0.0.0", TOKEN, "--allow-host", "proxy.example", "--allow-origin", "https://ui.example") as (_p, connect, port):
        url = f"http://{connect}:{port}/mcp"
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert post(url, {**auth, "Host": "proxy.example"}).status_code == 200
        assert post(url, {**auth, "Host": f"proxy.example:{port}", "Origin": "https://ui.example"}).status_code == 200
        assert post(url, {**auth, "Host": "other.example"}).status_code == 421


async def test_loopback_needs_the_token_too(workspace):
    """Any user of a shared GPU node can reach 127.0.0.1: a loopback bind wants the token as any other."""
    async with served(workspace, "127.0.0.1", TOKEN) as (_proc, connect, port):
        url = f"http://{connect}:{port}/mcp"
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert post(url, {}).status_code == 401
        assert post(url, {"Authorization": "Bearer wrong-token-of-enough-length"}).status_code == 401
        assert post(url, {**auth, "Host": f"evil.example:{port}"}).status_code == 421
        assert post(url, auth).status_code == 200
        assert "target gfx950" in await round_trip(url, auth)
        with pytest.raises(ExceptionGroup) as refused:  # the client's task groups wrap the server's refusal
            await round_trip(url, {})
        assert refused.group_contains(MCPError, match="error response")


async def test_loopback_without_a_token_given_generates_and_prints_one(workspace):
    async with served(workspace, "127.0.0.1", None) as (proc, connect, port):
        url = f"http://{connect}:{port}/mcp"
        assert post(url, {}).status_code == 401
        proc.terminate()
        proc.wait(10)
        printed = [line for line in proc.stderr.read().splitlines() if "bearer token" in line]
    assert len(printed) == 1 and len(printed[0].rsplit(" ", 1)[1]) >= 32


async def test_no_token_serves_loopback_without_one_but_still_checks_host(workspace):
    async with served(workspace, "127.0.0.1", None, "--no-token") as (proc, connect, port):
        url = f"http://{connect}:{port}/mcp"
        assert post(url, {}).status_code == 200
        assert post(url, {"Host": f"evil.example:{port}"}).status_code == 421
        assert "target gfx950" in await round_trip(url, {})
        proc.terminate()
        proc.wait(10)
        said = proc.stderr.read()
    assert "without a token" in said and "bearer token" not in said


@pytest.mark.parametrize(
    "bind, env_token, refusal",
    [
        ("0.0.0.0", None, "loopback only"),
        ("127.0.0.1", TOKEN, "contradict"),
        (None, None, "--http"),
    ],
    ids=["beyond-loopback", "with-a-token", "stdio"],
)
def test_no_token_is_refused_where_it_would_open_the_commands(workspace, bind, env_token, refusal):
    env = {k: v for k, v in os.environ.items() if k != "KERNEL_MCP_HTTP_TOKEN"}
    if env_token:
        env["KERNEL_MCP_HTTP_TOKEN"] = env_token
    http = ["--http", f"{bind}:1"] if bind else []
    done = subprocess.run(
        [PY, "-m", "kernel_mcp", "serve", "--workspace", str(workspace), *http, "--no-token"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 2 and refusal in done.stderr, done.stderr


async def test_a_short_token_is_refused(workspace):
    env = {**os.environ, "KERNEL_MCP_HTTP_TOKEN": "short"}
    done = subprocess.run(
        [PY, "-m", "kernel_mcp", "serve", "--workspace", str(workspace), "--http", "0.0.0.0:1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "too short" in done.stderr
