"""The Claude Code skills: front matter parses, every tool they name exists with the arguments they
use (a renamed tool or argument breaks this test), they list as MCP prompts, and install-skills copies them."""

from __future__ import annotations

import json
import re
import shlex
import subprocess

import pytest
import yaml
from mcp import Client

from kernel_mcp import skills
from kernel_mcp.server import TOOLS, build_server

from conftest import PY

pytestmark = pytest.mark.anyio
CALL = re.compile(r"\b([a-z_]+)\(([^)]*)\)")
EXPECTED = {"kernel-trace-analysis", "kernel-opt", "kernel-scientist"}


def test_front_matter_parses():
    found = {s.name: s for s in skills.all_skills()}
    assert set(found) == EXPECTED
    for skill in found.values():
        assert skill.folder.name == skill.name and len(skill.description) > 40 and len(skill.body) > 1000


def test_front_matter_is_strict_yaml():
    """Claude Code and other skill loaders parse the front matter as YAML: an unquoted ': ' inside a
    value is a YAML error there, whatever kernel-mcp's own reader makes of it."""
    for skill in skills.all_skills():
        text = (skill.folder / "SKILL.md").read_text(encoding="utf-8")
        head = text[4:].split("\n---\n", 1)[0]
        fields = yaml.safe_load(head)
        assert isinstance(fields, dict), skill.name
        assert fields["name"] == skill.name and fields["description"] == skill.description, skill.name


def test_quoted_front_matter_values(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: s\ndescription: \"a: b, \\\"c\\\"\"\nother: 'it''s'\n---\nbody\n")
    parsed = skills.parse_skill(folder / "SKILL.md")
    assert parsed.description == 'a: b, "c"' == yaml.safe_load((folder / "SKILL.md").read_text().split("---")[1])["description"]


def test_every_named_tool_exists_with_its_arguments():
    tools = {spec.name: set(spec.input_model.model_fields) for spec in TOOLS}
    used = 0
    for skill in skills.all_skills():
        for path in skill.folder.glob("*.md"):
            for name, args in CALL.findall(path.read_text()):
                if name not in tools and not name.startswith(("experiment_", "profile_", "thread_trace", "docs_", "compile_", "isa_", "run_", "gpu_", "hw_")):
                    continue
                assert name in tools, f"{path.name} names a tool that does not exist: {name}"
                for arg in re.findall(r"(\w+)\s*=", args):
                    assert arg in tools[name], f"{path.name}: {name} has no argument {arg!r}"
                used += 1
    assert used > 40
    names = {n for skill in skills.all_skills() for n, _ in CALL.findall(skill.body) if n in tools}
    assert {
        "experiment_start",
        "experiment_evaluate",
        "experiment_keep",
        "experiment_revert",
        "profile_kernels",
        "thread_trace",
        "compile_kernel",
        "experiment_log",
    } <= names


LOAD = re.compile(r"tools_load\(toolsets=(\[[^\]]*\])\)")


def test_every_skill_loads_the_toolsets_of_the_tools_it_names():
    """kernel-mcp lists the core toolset until tools_load lists another (kernel_mcp.toolsets), and
    Claude Code answers a call of an unlisted tool with "No such tool available" without asking the
    server: a skill that names a tool outside the core set loads its toolset first. Its templates
    (the plan and report) count as the skill's."""
    toolset = {spec.name: spec.toolset for spec in TOOLS}
    for skill in skills.all_skills():
        loaded = {name for call in LOAD.findall(skill.body) for name in json.loads(call)}
        text = "\n".join(path.read_text() for path in skill.folder.glob("*.md"))
        named = {name for name in toolset if re.search(rf"\b{name}\b", text)}
        needed = {toolset[name] for name in named} - {"core"}
        assert needed and needed <= loaded, f"{skill.name} names tools of {sorted(needed - loaded)} and loads {sorted(loaded)}"
        assert loaded <= needed, f"{skill.name} loads {sorted(loaded - needed)}, whose tools it never names"


async def test_prompts_list_and_render(tmp_path):
    async with Client(build_server(tmp_path)) as client:
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert prompts == EXPECTED
        got = await client.get_prompt("kernel-opt", {"goal": "make conv3d_fast faster on x3d shapes"})
        text = got.messages[0].content.text
        assert "experiment_evaluate" in text and "make conv3d_fast faster" in text


async def test_prompts_carry_the_files_they_name(tmp_path):
    """A prompt that says 'copy plan-template.md beside this file' must hold that file: an MCP
    client has no folder to read it from. Each such file is a resource too."""
    named = re.compile(r"`([\w.-]+\.md)`[^.]*beside this file|beside this file[^.]*`([\w.-]+\.md)`")
    async with Client(build_server(tmp_path)) as client:
        resources = {str(r.uri): r for r in (await client.list_resources()).resources}
        checked = 0
        for skill in skills.all_skills():
            text = (await client.get_prompt(skill.name, {})).messages[0].content.text
            for match in named.finditer(skill.body):
                name = match.group(1) or match.group(2)
                assert name in skill.files, f"{skill.name} names {name} beside it, but the folder has no such file"
                assert f'<file name="{name}">' in text and skill.read(name).strip() in text
                uri = skill.resource_uri(name)
                assert uri in resources
                assert (await client.read_resource(uri)).contents[0].text == skill.read(name)
                checked += 1
    assert checked >= 2  # plan-template.md and report-template.md


def test_install_skills_project(tmp_path):
    done = subprocess.run([PY, "-m", "kernel_mcp", "install-skills", "--project", "--workspace", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    for name in EXPECTED:
        assert (tmp_path / ".claude" / "skills" / name / "SKILL.md").exists()
    line = next(out for out in done.stdout.splitlines() if "claude mcp add" in out)
    argv = shlex.split(line.split("claude mcp add kernel-mcp -- ", 1)[1])
    assert argv[0] == PY and argv[1:] == ["-m", "kernel_mcp", "serve", "--workspace", str(tmp_path.resolve())]


def test_every_skill_says_what_works_without_a_gpu_monitor_or_a_profiler():
    """An offline or CPU-only workspace, or a machine missing the profiler or the monitor, still has
    compile facts, ISA, docs, occupancy, roofline from given numbers, imports and CPU benchmarks:
    the skills say so instead of telling the agent to stop."""
    found = {s.name: s.body for s in skills.all_skills()}
    for name, body in found.items():
        assert "Without a GPU monitor or a profiler" in body or "without a GPU monitor or a profiler" in body, name
        assert "profile_import(" in body and "thread_trace_import(" in body, name
    opt = found["kernel-opt"]
    for needed in ("compile_kernel(", "isa_view(", "isa_lookup(", "docs_search(", "hw_spec(", "occupancy(", "roofline(", "CPU benchmarks"):
        assert needed in opt, needed
    assert "stop and tell the human what doctor says" not in opt and "a missing profiler or monitor alone is never a stop" in opt
    assert "Missing ones never end the report" in found["kernel-trace-analysis"]
