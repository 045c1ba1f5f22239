"""Checks experiment_start makes before anything is measured, on real git repositories: git can
commit here (a keep commits), and the editable globs name at least one file (else every change
is refused)."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from kernel_mcp.errors import InvalidInput, WorkspaceError
from kernel_mcp.ledger.gitops import require_identity
from kernel_mcp.ledger.harness import editable_files, require_editable
from kernel_mcp.workspace.config import HarnessConfig

IDENTITY_VARIABLES = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL")


@pytest.fixture
def no_identity(tmp_path, monkeypatch) -> git.Repo:
    """A repository on a machine where git knows no one: an empty home, no system config, and a
    global config that only forbids guessing (on a host with a domain name git would otherwise
    make up user@host and commit with it, and the check rightly passes there)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "gitconfig").write_text("[user]\n\tuseConfigOnly = true\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
    for name in IDENTITY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return git.Repo.init(tmp_path / "repo")


def test_no_identity_is_refused_with_the_commands_that_fix_it(no_identity):
    with pytest.raises(WorkspaceError, match="no committer identity") as caught:
        require_identity(no_identity)
    assert "git config user.name" in caught.value.hint and "user.email" in caught.value.hint


def test_without_any_config_git_itself_decides(no_identity, monkeypatch):
    """With GIT_CONFIG_GLOBAL=/dev/null git may guess from the host; the check says what git says."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    try:
        guessed = no_identity.git.var("GIT_COMMITTER_IDENT")
    except git.GitCommandError:
        guessed = None
    if guessed is None:
        with pytest.raises(WorkspaceError, match="no committer identity"):
            require_identity(no_identity)
    else:
        require_identity(no_identity)


def test_the_repository_config_is_an_identity(no_identity):
    with no_identity.config_writer() as config:
        config.set_value("user", "name", "Ada")
        config.set_value("user", "email", "ada@example.invalid")
    require_identity(no_identity)
    Path(no_identity.working_tree_dir, "f").write_text("x\n")
    no_identity.git.add("f")
    no_identity.git.commit("-m", "git agrees: it can commit")


def test_environment_variables_are_an_identity(no_identity, monkeypatch):
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Ada")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "ada@example.invalid")
    require_identity(no_identity)


def test_only_a_name_is_not_enough(no_identity, monkeypatch):
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Ada")
    with pytest.raises(WorkspaceError, match="no committer identity"):
        require_identity(no_identity)


@pytest.fixture
def repo(tmp_path) -> git.Repo:
    """A workspace in the folder `ws` of a repository: kernel sources, a harness, ignored outputs."""
    root = tmp_path / "repo"
    files = {
        "ws/src/kernel.cu": "k\n",
        "ws/src/kernel.cuh": "h\n",
        "ws/src/reference.cu": "r\n",
        "ws/src/gone.cu": "g\n",
        "ws/bench.py": "b\n",
        "ws/kernel-mcp.toml": "\n",
        "ws/.gitignore": "out/\n",
        "other/elsewhere.cu": "e\n",
    }
    for rel, body in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body)
    r = git.Repo.init(root)
    r.git.add("-A")
    r.git.commit("-m", "workspace", "--author", "t <t@example.invalid>")
    (root / "ws/src/gone.cu").unlink()  # tracked but deleted: not a file an attempt can edit
    (root / "ws/src/new.cu").write_text("n\n")  # untracked, not ignored: part of the workspace
    (root / "ws/out").mkdir()
    (root / "ws/out/generated.cu").write_text("o\n")  # ignored output
    return r


def test_editable_files_are_the_workspace_files_the_globs_allow(repo):
    workdir = Path(repo.working_tree_dir, "ws")
    harness = HarnessConfig(editable=["src/*.cu", "src/*.cuh", "out/*.cu"], protected=["src/reference.cu"])
    assert editable_files(repo, "ws", workdir, harness) == ["src/kernel.cu", "src/kernel.cuh", "src/new.cu"]
    assert require_editable(repo, "ws", workdir, harness) == ["src/kernel.cu", "src/kernel.cuh", "src/new.cu"]
    # the default globs (every kernel source anywhere) see the same workspace, and nothing outside it
    assert editable_files(repo, "ws", workdir, HarnessConfig()) == ["src/kernel.cu", "src/kernel.cuh", "src/new.cu", "src/reference.cu"]


def test_globs_that_match_nothing_are_refused_naming_them_and_the_files(repo):
    workdir = Path(repo.working_tree_dir, "ws")
    harness = HarnessConfig(editable=["src/*.hip", "src/*.h"])
    assert editable_files(repo, "ws", workdir, harness) == []
    with pytest.raises(InvalidInput) as caught:
        require_editable(repo, "ws", workdir, harness)
    message = caught.value.message
    assert '["src/*.hip", "src/*.h"]' in message and "matches no file" in message
    assert "src/kernel.cu" in message and "bench.py" in message
    assert "gone.cu" not in message and "out/generated.cu" not in message and "elsewhere.cu" not in message
    # the suggestion names the kernel sources, and keeps the reference out of it
    assert 'editable = ["src/kernel.cu", "src/kernel.cuh", "src/new.cu"]' in caught.value.hint


def test_protected_globs_can_leave_nothing_editable(repo):
    workdir = Path(repo.working_tree_dir, "ws")
    harness = HarnessConfig(editable=["src/*"], protected=["src/*"])
    with pytest.raises(InvalidInput, match=r'\(protected: \["src/\*"\]\) matches no file'):
        require_editable(repo, "ws", workdir, harness)
