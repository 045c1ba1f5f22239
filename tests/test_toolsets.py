"""Progressive discovery through the SDK's real client: tools/list shows the core toolset and
tools_load; tools_load (or a call of any tool by name) lists a toolset for the session and says
so with notifications/tools/list_changed; `[server] tools = "all"` lists everything."""

from __future__ import annotations

import os
from typing import get_args

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.subscriptions import ToolsListChanged
from mcp_types import ToolListChangedNotification

from kernel_mcp.server import TOOLS, build_server
from kernel_mcp.tooling import Toolset
from kernel_mcp.toolsets import CATALOG, TOOLS_LOAD, Loadable

from conftest import PY, text_of, write_toml

pytestmark = pytest.mark.anyio

WAIT_S = 60  # a limit on a hang, not a timing
EVERY = {spec.name for spec in TOOLS}
OF = {name: {spec.name for spec in TOOLS if spec.toolset == name} for name in get_args(Toolset)}


def names(listing) -> set[str]:
    return {tool.name for tool in listing.tools}


class Notifications:
    """A message handler that keeps the tools/list_changed notifications a client receives."""

    def __init__(self) -> None:
        self.changed = 0

    async def __call__(self, message) -> None:
        if isinstance(message, ToolListChangedNotification):
            self.changed += 1


def test_every_tool_has_a_toolset_and_tools_load_names_every_tool_outside_the_core():
    assert set(OF) == {"core", *CATALOG} and tuple(CATALOG) == get_args(Loadable)
    assert all(OF[name] for name in OF)  # no empty toolset
    load = next(spec for spec in TOOLS if spec.name == TOOLS_LOAD)
    assert load.toolset == "core"
    for name, (_, tools) in CATALOG.items():
        assert set(tools) == OF[name], name  # the catalog names each toolset's tools, and nothing else
        assert f"{name} (" in load.description
        for tool in tools:
            assert f"{tool} (" in load.description, tool
    schema = load.input_model.model_json_schema()
    assert schema["properties"]["toolsets"]["items"]["enum"] == list(CATALOG)


async def test_the_default_listing_is_the_core_toolset_and_tools_load(workspace):
    async with Client(build_server(workspace)) as client:
        listed = names(await client.list_tools())
    assert listed == OF["core"] and TOOLS_LOAD in listed and "doctor" in listed
    assert not listed & (EVERY - OF["core"])


async def test_tools_load_notifies_and_lists_the_toolset_for_the_session(workspace):
    """Under the handshake protocol (what Claude Code speaks), over the SDK's in-memory transport."""
    heard = Notifications()
    server = build_server(workspace)
    async with Client(server, mode="legacy", message_handler=heard) as client, Client(server, mode="legacy") as other:
        assert client.server_capabilities.tools is not None and client.server_capabilities.tools.list_changed is True
        assert names(await client.list_tools()) == OF["core"]
        answer = await client.call_tool(TOOLS_LOAD, {"toolsets": ["hardware", "machine"]})
        assert not answer.is_error and heard.changed == 1
        assert answer.structured_content["loaded"] == ["hardware", "machine"]
        assert {tool["name"] for tool in answer.structured_content["tools"]} == OF["hardware"] | OF["machine"]
        assert "hw_spec (hardware): Hardware figures" in text_of(answer)
        assert names(await client.list_tools()) == OF["core"] | OF["hardware"] | OF["machine"]
        # idempotent: the same answer, nothing changes, nothing is sent
        again = await client.call_tool(TOOLS_LOAD, {"toolsets": ["hardware"]})
        assert not again.is_error and heard.changed == 1
        assert names(await client.list_tools()) == OF["core"] | OF["hardware"] | OF["machine"]
        # per session: another client of the same server still sees the core toolset
        assert names(await other.list_tools()) == OF["core"]
        # a toolset that does not exist is refused, and loads nothing
        bad = await client.call_tool(TOOLS_LOAD, {"toolsets": ["everything"]})
        assert bad.is_error and heard.changed == 1


async def test_the_answer_of_a_load_waits_for_the_clients_relisting(workspace):
    """A client that re-reads tools/list when told has the new listing before the load's answer
    (Claude Code builds the model's next request with the tools it holds when the answer comes)."""
    events: list[str] = []
    async with anyio.create_task_group() as group:

        async def relist() -> None:
            listed = names(await client.list_tools())
            events.append("relisted with hw_spec" if "hw_spec" in listed else "relisted without hw_spec")

        async def on_message(message) -> None:
            if isinstance(message, ToolListChangedNotification):
                events.append("notified")
                group.start_soon(relist)

        async with Client(build_server(workspace), mode="legacy", message_handler=on_message) as client:
            with anyio.fail_after(WAIT_S):
                answer = await client.call_tool(TOOLS_LOAD, {"toolsets": ["hardware"]})
            events.append("answered")
    assert not answer.is_error
    assert events == ["notified", "relisted with hw_spec", "answered"]


async def test_an_unlisted_tool_is_callable_by_name_and_its_call_loads_its_toolset(workspace):
    """Under the 2026-07-28 protocol (the SDK client's default), where the change is published to
    subscriptions/listen streams."""
    async with Client(build_server(workspace)) as client, client.listen(tools_list_changed=True) as changes:
        assert "hw_spec" not in names(await client.list_tools())
        answer = await client.call_tool("hw_spec", {"arch": "gfx950", "section": "lds"})
        assert not answer.is_error and "lds" in text_of(answer).lower()
        with anyio.fail_after(WAIT_S):
            event = await changes.__anext__()
        assert isinstance(event, ToolsListChanged)
        assert names(await client.list_tools()) == OF["core"] | OF["hardware"]


async def test_a_call_by_name_loads_its_toolset_under_the_handshake_too(workspace):
    heard = Notifications()
    async with Client(build_server(workspace), mode="legacy", message_handler=heard) as client:
        ran = await client.call_tool("run_command", {"name": "hello"})
        assert not ran.is_error and "hello from the workspace" in text_of(ran)
        assert heard.changed == 1 and names(await client.list_tools()) == OF["core"] | OF["machine"]
        # a core tool changes nothing
        assert not (await client.call_tool("workspace_info", {})).is_error and heard.changed == 1


@pytest.mark.parametrize("how", ["config", "argument"])
async def test_all_lists_every_tool_from_the_start(workspace, how):
    if how == "config":
        write_toml(workspace, (workspace / "kernel-mcp.toml").read_text() + '\n[server]\ntools = "all"\n')
    heard = Notifications()
    async with Client(build_server(workspace, tools="all" if how == "argument" else None), mode="legacy", message_handler=heard) as client:
        assert names(await client.list_tools()) == EVERY
        # tools_load still answers (a skill may call it); nothing changes, so nothing is said
        loaded = await client.call_tool(TOOLS_LOAD, {"toolsets": ["batch"]})
        assert not loaded.is_error and heard.changed == 0
        assert names(await client.list_tools()) == EVERY


async def test_serve_takes_the_listing_on_its_command_line(workspace):
    params = StdioServerParameters(command=PY, args=["-m", "kernel_mcp", "serve", "--workspace", str(workspace), "--tools", "all"], env=dict(os.environ))
    async with Client(params) as client:
        assert names(await client.list_tools()) == EVERY
    params = StdioServerParameters(command=PY, args=["-m", "kernel_mcp", "serve", "--workspace", str(workspace)], env=dict(os.environ))
    async with Client(params) as client:
        assert names(await client.list_tools()) == OF["core"]
