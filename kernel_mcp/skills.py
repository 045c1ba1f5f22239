"""The Claude Code skills shipped in skills/: listing, installing, and serving them as MCP prompts."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from kernel_mcp.errors import KernelMcpError

SKILLS_ENV = "KERNEL_MCP_SKILLS"


def skills_dir() -> Path:
    from kernel_mcp.hardware.specs import shipped_folder

    return shipped_folder("skills", SKILLS_ENV)


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    folder: Path


def parse_skill(path: Path) -> Skill:
    """SKILL.md: YAML front matter with `name` and `description` (single-line values), then Markdown."""
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---\n") or "\n---\n" not in text[4:]:
        raise KernelMcpError(f"{path}: no front matter between --- lines")
    head, body = text[4:].split("\n---\n", 1)
    fields = {}
    for line in head.splitlines():
        key, sep, value = line.partition(":")
        if sep and not line.startswith((" ", "\t")):
            fields[key.strip()] = value.strip().strip('"')
    missing = [k for k in ("name", "description") if not fields.get(k)]
    if missing:
        raise KernelMcpError(f"{path}: front matter lacks {', '.join(missing)}")
    return Skill(fields["name"], fields["description"], body.strip(), path.parent)


def all_skills() -> list[Skill]:
    return [parse_skill(p) for p in sorted(skills_dir().glob("*/SKILL.md"))]


def install(destination: Path) -> list[Path]:
    """Copy every skill folder under `destination` (a .claude/skills folder)."""
    destination.mkdir(parents=True, exist_ok=True)
    done = []
    for skill in all_skills():
        target = destination / skill.folder.name
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(skill.folder, target)
        done.append(target)
    return done
