"""The Claude Code skills shipped in skills/: listing, installing, and serving them as MCP prompts.

A skill is a folder: SKILL.md and the files it names as being beside it (the report and plan
templates). Claude Code reads those files from the folder; an MCP client cannot, so the prompt
text carries them after the skill's body, and each is also an MCP resource (`resource_uri`)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from kernel_mcp.errors import KernelMcpError

SKILLS_ENV = "KERNEL_MCP_SKILLS"


def skills_dir() -> Path:
    from kernel_mcp.hardware.specs import shipped_folder

    return shipped_folder("skills", SKILLS_ENV)


RESOURCE_PREFIX = "kernel-mcp://skills/"


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    folder: Path

    @property
    def files(self) -> tuple[str, ...]:
        """The files beside SKILL.md (the templates it names), by name."""
        return tuple(sorted(p.name for p in self.folder.iterdir() if p.is_file() and p.name != "SKILL.md" and not p.name.startswith(".")))

    def read(self, name: str) -> str:
        if name not in self.files:
            raise KernelMcpError(f"skill {self.name} has no file {name!r}", hint="files: " + (", ".join(self.files) or "none"))
        return (self.folder / name).read_text(encoding="utf-8")

    def resource_uri(self, name: str) -> str:
        return f"{RESOURCE_PREFIX}{self.name}/{name}"

    def prompt(self, goal: str = "") -> str:
        """The skill as one self-contained text: its body, then the files it calls 'beside this file'."""
        parts = [self.body]
        if self.files:
            parts.append(
                "---\n\nThe files this skill names as beside it follow, whole; copy a template from here "
                "(each is also the MCP resource " + RESOURCE_PREFIX + self.name + "/<file>)."
            )
            parts += [f'<file name="{name}">\n{self.read(name).strip()}\n</file>' for name in self.files]
        if goal:
            parts.append(f"The user's goal for this session: {goal}")
        return "\n\n".join(parts)


def _scalar(value: str) -> str:
    """A one-line YAML scalar: plain, or quoted ("..." with \\" and \\\\ escapes, or '...' with '')."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    return value


def parse_skill(path: Path) -> Skill:
    """SKILL.md: YAML front matter with `name` and `description` (single-line values; quote one that
    holds ': ' or starts with a YAML indicator, or strict YAML parsers reject it), then Markdown."""
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---\n") or "\n---\n" not in text[4:]:
        raise KernelMcpError(f"{path}: no front matter between --- lines")
    head, body = text[4:].split("\n---\n", 1)
    fields = {}
    for line in head.splitlines():
        key, sep, value = line.partition(":")
        if sep and not line.startswith((" ", "\t")):
            fields[key.strip()] = _scalar(value)
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
