"""The build step pyproject.toml cannot say: the folders the server reads at run time.

`docs_index/` (the documentation index and the hardware tables) and `skills/` (the Claude Code
skills, served as MCP prompts with their templates) live at the repository's root, where people
edit them. A wheel carries them inside the package, as `kernel_mcp/shipped/<folder>/`, where
`arch_registry.shipped_folder` finds them; an editable install reads the root folders directly.
Everything else is declared in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SHIPPED = ("docs_index", "skills")


class build_py_with_shipped_folders(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the folders where they are
        for name in SHIPPED:
            source = ROOT / name
            if not source.is_dir():
                raise SystemExit(f"{name}/ is missing from the source tree; the wheel would not work without it")
            target = Path(self.build_lib) / "kernel_mcp" / "shipped" / name
            if target.exists():
                shutil.rmtree(target)  # a file deleted from the source must not survive in a rebuilt wheel
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".*"))


setup(cmdclass={"build_py": build_py_with_shipped_folders})
