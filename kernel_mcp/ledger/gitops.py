"""The git side of the ledger, through GitPython, confined to the experiment's own worktree.

No value from a tool argument ever reaches git as an option: tags are validated names, paths are
passed after `--`, and resets happen only inside the dedicated worktree.

Git is an untrusted subprocess here: a worktree is written by the code being judged, and a
repository's config can name programs. So every git call of the server goes through the runner
(its own session, a time limit, the process tree killed at the limit), with hooks, fsmonitor,
clean/smudge filters, textconv and external diff off; the ledger asks git for commits and refs
rather than GitPython's object database (which keeps `git cat-file` processes of its own); and
before any git call in a worktree, its `.git` pointer must lead to the workspace's own repository
(`checked_worktree`). That check names tampering, but no git call relies on it: the pointer lies in
a folder the judged code writes and can change between two calls of one step, so every git call in
a worktree of the ledger names its repository itself (GIT_DIR, the repository's own record of the
worktree, and GIT_WORK_TREE: `open_worktree`), and git never reads the pointer. Submodules are
never entered: a repository nested in a worktree has a config of its own, which names programs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

import git

from kernel_mcp import runner
from kernel_mcp.errors import CommandFailed, InvalidInput, WorkspaceError
from kernel_mcp.ledger import spent

# \Z, not $: `$` also matches before a trailing newline, so "t\n" would pass as a name
TAG = re.compile(r"^[a-z0-9][a-z0-9._-]{0,47}\Z")
LEDGER_MARK = "Kernel-MCP-Attempt"


GIT_TIMEOUT_S = 120.0  # one git call; a repository that needs longer is refused, never waited on forever
GIT_OUTPUT_CAP = 256 * 2**20  # bytes of one call's output kept; more is an error, never a silent cut
# What the server's own git calls never run, whatever a config (the user's, or one a worktree's
# pointer leads to) says: hooks, the file-system monitor, and programs named for diffs.
HARDENED = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "core.sshCommand=false",
    "-c",
    "protocol.allow=never",
    # a repository nested in a worktree is never entered (its own config could name a filter)
    "-c",
    "submodule.recurse=false",
    "-c",
    "diff.ignoreSubmodules=all",
    "-c",
    "status.submoduleSummary=false",
)
NO_DIFF_PROGRAMS = ("--no-ext-diff", "--no-textconv")  # for the commands that show diffs: no external diff, no textconv
SHOWS_DIFFS = ("diff", "log", "show")
NO_SUBMODULES = ("--ignore-submodules=all",)  # for diff and status, whatever a config says
COMPARES_SUBMODULES = ("diff", "status")
# the commands that read or write the working tree, where git would run a clean/smudge filter
RUNS_FILTERS = ("add", "apply", "checkout", "clean", "commit", "diff", "read-tree", "reset", "restore", "stash", "status", "worktree")
_NO_FILTERS = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}
_pool = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="kernel-mcp-git")


def _filter_overrides(names: set[str]) -> list[str]:
    """`-c filter.<name>.clean=` (and smudge, process) for each filter driver: an empty command is no
    filter, so content goes to git as it is on disk."""
    args: list[str] = []
    for name in sorted(names):
        for key in ("clean", "smudge", "process"):
            args += ["-c", f"filter.{name}.{key}="]
        args += ["-c", f"filter.{name}.required=false"]
    return args


class RunnerGit(git.Git):
    """GitPython's command wrapper, with every call run through the runner, hardened."""

    _filter_names: set[str] | None = None  # the filter drivers git's config defines here, asked once

    def _filters(self, git_exe: str, cwd: str, env: dict[str, str]) -> list[str]:
        """A filter runs only when the config defines its driver (an attributes line naming it is
        not enough), so the drivers the config defines are the ones to turn off."""
        if self._filter_names is None:
            listed = _run_git("config", [git_exe, *HARDENED, "config", "--get-regexp", r"^filter\..*\.(clean|smudge|process)$"], cwd, env, None, GIT_TIMEOUT_S)
            self._filter_names = {line.split(" ", 1)[0].split(".")[1] for line in listed.stdout.tail.splitlines() if line.count(".") >= 2}
        return _filter_overrides(self._filter_names)

    def execute(
        self,
        command: Any,
        istream: Any = None,
        with_extended_output: bool = False,
        with_exceptions: bool = True,
        as_process: bool = False,
        output_stream: Any = None,
        stdout_as_string: bool = True,
        kill_after_timeout: Any = None,
        with_stdout: bool = True,
        universal_newlines: bool = False,
        shell: Any = None,
        env: Any = None,
        max_chunk_size: int = 8192,
        strip_newline_in_stdout: bool = True,
        **subprocess_kwargs: Any,
    ) -> Any:
        if as_process or output_stream is not None or shell:
            raise CommandFailed("internal: a git call asked for a live process; the ledger runs git to completion only")
        argv = [str(a) for a in ([command] if isinstance(command, str) else command)]
        cwd = str(self._working_dir or os.getcwd())
        name = argv[1] if len(argv) > 1 else ""
        environment = {**_NO_FILTERS, **{k: v for k, v in self._environment.items() if v is not None}, **(env or {})}
        filters = self._filters(argv[0], cwd, environment) if name in RUNS_FILTERS else []
        argv = [
            argv[0],
            *HARDENED,
            *filters,
            *argv[1:2],
            *(NO_DIFF_PROGRAMS if name in SHOWS_DIFFS else ()),
            *(NO_SUBMODULES if name in COMPARES_SUBMODULES else ()),
            *argv[2:],
        ]
        stdin = None
        if istream is not None:
            stdin = istream.read() if hasattr(istream, "read") else os.read(istream, 1 << 30)
        result = _run_git(name, argv, cwd, environment, stdin, kill_after_timeout or GIT_TIMEOUT_S)
        out = result.stdout.tail if stdout_as_string else result.stdout.tail.encode()
        err = result.stderr.tail
        if strip_newline_in_stdout and isinstance(out, str) and out.endswith("\n"):
            out = out[:-1]
        if result.timed_out:
            raise git.GitCommandError(argv, "timed out", f"git ran past {GIT_TIMEOUT_S:.0f} s and was killed", out)
        if with_exceptions and result.returncode != 0:
            raise git.GitCommandError(argv, result.returncode, err, out)
        if with_extended_output:
            return result.returncode, out, err
        return out


def _run_git(name: str, argv: list[str], cwd: str, env: dict[str, str], stdin: bytes | None, timeout_s: float) -> runner.RunResult:
    """One git call through the runner, on a worker thread (the ledger's steps are synchronous)."""

    def call() -> runner.RunResult:
        return asyncio.run(runner.run(argv, cwd=cwd, timeout_s=timeout_s, env=env, stdin_data=stdin, tail_bytes=GIT_OUTPUT_CAP, sweep=False))

    with spent.timing("git"):
        result = _pool.submit(call).result()
    if result.stdout.total_bytes > GIT_OUTPUT_CAP:
        raise CommandFailed(f"git {name} wrote more than {GIT_OUTPUT_CAP} bytes")
    return result


class Repo(git.Repo):
    """A repository whose git calls are RunnerGit's. The ledger asks git for commits and refs
    (`head_sha`, `branch_exists`, `resolve_commit`) rather than GitPython's object database, which
    would keep `git cat-file` processes of its own."""

    GitCommandWrapperType = RunnerGit


def head_sha(repo: git.Repo) -> str | None:
    """HEAD's commit, or None where HEAD names no commit yet."""
    try:
        return repo.git.rev_parse("--verify", "-q", "HEAD^{commit}") or None
    except git.GitCommandError:
        return None


def branch_exists(repo: git.Repo, branch: str) -> bool:
    try:
        repo.git.show_ref("--verify", "--quiet", f"refs/heads/{branch}")
        return True
    except git.GitCommandError:
        return False


def pointer_problem(tree: Path, git_dir: Path) -> str | None:
    """Why the worktree `tree`'s `.git` pointer does not lead to the repository `git_dir`'s own
    record of it (and back), or None when it does."""
    pointer = tree / ".git"
    try:
        if pointer.is_symlink() or not pointer.is_file():
            return "its .git pointer is missing or not a plain file"
        text = pointer.read_text(errors="replace")[:4096].strip()
    except OSError:
        return "its .git pointer cannot be read"
    if not text.startswith("gitdir: "):
        return "its .git pointer is not a gitdir line"
    target = Path(text[len("gitdir: ") :].strip())
    target = tree / target if not target.is_absolute() else target
    expected_parent = (git_dir / "worktrees").resolve()
    try:
        resolved = target.resolve()
        if resolved.parent != expected_parent or not resolved.is_dir():
            return f"its .git pointer leads to {target}, not to this workspace's repository"
        back = Path((resolved / "gitdir").read_text(errors="replace").strip())
    except OSError:
        return "its .git pointer leads to a record the repository does not have"
    if back.resolve() != pointer.resolve():
        return "the repository's record of the worktree names another folder"
    return None


def worktree_record(git_dir: Path, tree: Path) -> Path | None:
    """The repository's own record of the worktree at `tree`: the folder under `<git_dir>/worktrees`
    whose `gitdir` (written by `git worktree add`, inside the repository, out of the judged code's
    reach) names `tree/.git`. None when the repository has no record of the folder."""
    records = git_dir / "worktrees"
    wanted = tree.resolve()
    for record in sorted(records.iterdir()) if records.is_dir() else []:
        try:
            named_there = Path((record / "gitdir").read_text(errors="replace").strip())
        except OSError:
            continue
        named_there = named_there if named_there.is_absolute() else record / named_there
        # the folders compared, never the `.git` entry itself: that one the judged code may replace
        if named_there.name == ".git" and named_there.parent.resolve() == wanted:
            return record.resolve()
    return None


def open_worktree(git_dir: Path, tree: Path) -> Repo:
    """The worktree at `tree`, whose every git call names its repository itself: GIT_DIR is the
    repository's own record of the worktree and GIT_WORK_TREE the folder, so git never reads the
    folder's `.git` pointer (which the judged code can rewrite at any moment, even between two
    calls of one step)."""
    record = worktree_record(git_dir, tree)
    if record is None:
        raise WorkspaceError(
            f"the workspace's repository has no record of the ledger's worktree {tree.name}; no git command was run in it",
            hint="experiment_revert, or start a new experiment",
        )
    wt = Repo(record)  # the record's own gitdir names the folder: GitPython reads nothing in it
    wt.git.update_environment(GIT_DIR=str(record), GIT_WORK_TREE=str(tree))
    return wt


def checked_worktree(tree: Path, git_dir: Path) -> Repo:
    """The worktree at `tree`, refused unless its `.git` pointer leads to the workspace's repository
    (a redirected pointer is tampering, named); its git calls never read the pointer (`open_worktree`)."""
    why = pointer_problem(tree, git_dir)
    if why:
        raise WorkspaceError(
            f"the ledger's worktree {tree.name}: {why}; no git command was run in it",
            hint="experiment_revert writes the pointer again from the repository's record and resets the worktree to BEST",
        )
    return open_worktree(git_dir, tree)


def repair_worktree(git_dir: Path, tree: Path) -> bool:
    """Write the worktree's `.git` pointer again from the repository's own record of it (the
    record whose `gitdir` names this folder): what git itself wrote at `worktree add`. False when the
    repository has no record of the folder."""
    record = worktree_record(git_dir, tree)
    if record is None:
        return False
    pointer = tree / ".git"
    if pointer.is_dir() and not pointer.is_symlink():
        shutil.rmtree(pointer)
    elif pointer.exists() or pointer.is_symlink():
        pointer.unlink()
    pointer.write_text(f"gitdir: {record}\n")
    return True


def check_tag(tag: str) -> str:
    if not isinstance(tag, str) or not TAG.fullmatch(tag) or ".." in tag or tag.endswith((".", ".lock")):
        raise InvalidInput(f"run tag {tag!r} must be lowercase letters, digits, '.', '_' or '-' (at most 48, not starting with '-')")
    return tag


def work_tree(repo: git.Repo) -> Path:
    """The repository's working tree: every repository the ledger works in has one."""
    if repo.working_tree_dir is None:
        raise WorkspaceError(f"{repo.git_dir} is a bare repository: it has no working tree")
    return Path(repo.working_tree_dir)


def repo_of(folder: Path) -> tuple[git.Repo, str]:
    """The repository holding the workspace, and the workspace's path inside it ('.' at the top)."""
    try:
        repo = Repo(folder, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise WorkspaceError(f"{folder} is not inside a git repository", hint="git init the workspace and commit the kernel first") from None
    if repo.bare or head_sha(repo) is None:
        raise WorkspaceError("the workspace's repository has no commit yet", hint="commit the kernel and its benchmark first")
    top = work_tree(repo).resolve()
    sub = folder.resolve().relative_to(top).as_posix()
    return repo, sub or "."


def require_identity(repo: git.Repo) -> None:
    """Refuse to start when git could not commit here: a keep commits in the experiment's worktree,
    and finding out then would lose the measured attempt. Asks git itself (`git var
    GIT_COMMITTER_IDENT`), so the repository's and the user's config, GIT_COMMITTER_NAME/EMAIL and
    git's own guess from the host all count, exactly as for a commit."""
    try:
        repo.git.var("GIT_COMMITTER_IDENT")
    except git.GitCommandError as exc:
        lines = [line.strip() for line in (exc.stderr or "").splitlines() if line.strip()]
        why = next((line.removeprefix("stderr: ").strip("'").strip() for line in reversed(lines) if "fatal:" in line), "")
        raise WorkspaceError(
            "git has no committer identity for the workspace's repository"
            + (f" ({why.removeprefix('fatal: ')})" if why else "")
            + ", and the ledger commits every kept change",
            hint='git config user.name "Your Name" && git config user.email you@example.com '
            "(in the workspace's repository, or with --global), or set GIT_COMMITTER_NAME and GIT_COMMITTER_EMAIL",
        ) from None


def ignore_state_folder(repo: git.Repo, subdir: str) -> None:
    """Keep `.kernel-mcp/` (worktrees, runs, ledger) out of the user's `git status`, via .git/info/exclude."""
    pattern = "/" + ("" if subdir == "." else subdir.rstrip("/") + "/") + ".kernel-mcp/"
    exclude = Path(repo.git_dir) / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    lines = exclude.read_text().splitlines() if exclude.exists() else []
    if pattern not in lines:
        exclude.write_text("\n".join(lines + [pattern]) + "\n")


def dirty_paths(repo: git.Repo) -> list[str]:
    out = repo.git.status("--porcelain", "--untracked-files=all")
    return [line[3:] for line in out.splitlines() if line.strip()]


def add_worktree(repo: git.Repo, path: Path, branch: str, start: str) -> git.Repo:
    if branch_exists(repo, branch):
        raise InvalidInput(f"branch {branch} already exists", hint="choose another run tag")
    repo.git.worktree("add", "-b", branch, "--", str(path), start)
    return open_worktree(Path(repo.common_dir).resolve(), path)


def carry_changes(repo: git.Repo, worktree: git.Repo) -> list[str]:
    """Bring the user's uncommitted changes (tracked diffs and untracked files) into the worktree.
    An untracked symbolic link is carried as the link it is (never its target's content); an
    untracked git repository of its own, or anything but a file or a link, is refused by name."""
    patch = repo.git.diff("HEAD", "--binary")
    if patch:
        worktree.git.execute(["git", "apply", "--index", "-"], istream=_Stdin(patch + "\n"))
    copied = []
    for rel in repo.git.ls_files("-z", "--others", "--exclude-standard").split("\0"):
        if not rel:
            continue
        src = work_tree(repo) / rel
        dst = work_tree(worktree) / rel
        if rel.endswith("/"):  # git lists a folder holding a repository of its own as the folder
            raise InvalidInput(
                f"the workspace holds an untracked git repository of its own at {rel.rstrip('/')}: carry_changes does not "
                "bring it into the experiment (git would take it for a submodule, whose own config names programs)",
                hint="commit it, add it to .gitignore (or .git/info/exclude), or move it out of the repository",
            )
        mode = src.lstat().st_mode
        if not (stat.S_ISLNK(mode) or stat.S_ISREG(mode)):
            raise InvalidInput(
                f"the workspace's untracked {rel} is not a file or a symbolic link: carry_changes brings only those",
                hint="add it to .gitignore (or .git/info/exclude), or move it away",
            )
        dst.parent.mkdir(parents=True, exist_ok=True)
        if stat.S_ISLNK(mode):
            os.symlink(os.readlink(src), dst)  # as git commits a link: its target's name, never the content behind it
        else:
            shutil.copy2(src, dst)  # the file's bits, its executable bit included
        copied.append(rel)
    return copied


def _Stdin(text: str):
    """A real file for GitPython's `istream` (subprocess needs a file descriptor)."""
    handle = tempfile.TemporaryFile()
    handle.write(text.encode())
    handle.seek(0)
    return handle


# The ledger writes performance.md itself; it is never part of what an attempt changed.
NOT_THE_ATTEMPTS = ":(exclude,glob)**/performance.md"


def changed_files(wt: git.Repo, base: str) -> list[str]:
    """Files that differ from `base` in the worktree (modified, added, deleted, untracked)."""
    tracked = wt.git.diff("--name-only", base, "--", ".", NOT_THE_ATTEMPTS).splitlines()
    untracked = wt.git.ls_files("--others", "--exclude-standard", "--", ".", NOT_THE_ATTEMPTS).splitlines()
    return sorted(set(tracked) | set(untracked))


def commit_all(wt: git.Repo, message: str) -> str:
    wt.git.add("-A", "--", ".")
    wt.git.commit("--no-verify", "--allow-empty", "-F", "-", istream=_Stdin(message))
    return head_sha(wt) or ""


def reset_to(wt: git.Repo, commit: str) -> list[str]:
    """The worktree back to `commit`: tracked files, untracked ones the attempt added (a repository
    nested in an untracked folder with them), and a `.git` made inside a tracked folder, which git
    itself never removes; ignored build outputs stay. Returns the nested `.git`s removed."""
    wt.git.reset("--hard", commit)
    wt.git.clean("-ffd", "--", ".")  # -ff: an untracked folder holding a repository goes too
    nested = nested_repositories(wt)
    top = work_tree(wt)
    for rel in nested:
        path = top / rel
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    return nested


def nested_repositories(wt: git.Repo) -> list[str]:
    """Every `.git` inside the worktree other than its own pointer, outside the folders git ignores
    (a build's fetched dependency there is never part of a commit), worktree-relative. Git takes such
    a folder for a submodule, whose own config (filters) is the judged code's."""
    listed = wt.git.ls_files("-z", "--others", "--ignored", "--exclude-standard", "--directory")
    ignored = {p.rstrip("/") for p in listed.split("\0") if p.endswith("/")}
    top = work_tree(wt)
    found: list[str] = []
    for folder, dirs, files in os.walk(top):
        rel_folder = os.path.relpath(folder, top)
        for name in [d for d in dirs if d == ".git"] + [f for f in files if f == ".git"]:
            if rel_folder != ".":
                found.append(f"{rel_folder}/{name}")
        dirs[:] = [d for d in dirs if d != ".git" and os.path.normpath(os.path.join(rel_folder, d)) not in ignored]
    return sorted(found)


def gitlinks(wt: git.Repo, commit: str) -> dict[str, str]:
    """The commit's submodule entries (mode 160000): path -> the commit they name."""
    listed = wt.git.execute(["git", "ls-tree", "-r", "-z", "--full-tree", commit], with_extended_output=False)
    found = {}
    for entry in listed.split("\0"):
        meta, _, path = entry.partition("\t")
        if meta.startswith("160000 "):
            found[path] = meta.split(" ")[2]
    return found


def new_gitlinks(wt: git.Repo, base: str, commit: str) -> list[str]:
    """Submodule entries that `commit` adds or changes against `base` (the user's own are BEST's)."""
    before = gitlinks(wt, base)
    return sorted(path for path, sha in gitlinks(wt, commit).items() if before.get(path) != sha)


def nested_problem(nested: list[str], links: list[str]) -> str | None:
    """Why a candidate holding nested repositories or new submodule entries is refused, or None."""
    if not nested and not links:
        return None
    where = ", ".join((nested + [f"{p} (a submodule entry)" for p in links])[:6])
    return (
        f"the candidate's tree holds a git repository of its own: {where}; git would take it for a submodule and run "
        "what its config names, and its files are not part of any commit, so it can be neither measured nor kept"
    )


# ---- candidates of experiment_evaluate_many ----------------------------------------------------
SHA = re.compile(r"^[0-9a-f]{7,40}\Z")  # \Z: matched in full, a trailing newline included
REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}\Z")


def resolve_commit(repo: git.Repo, name: str) -> str:
    """A commit named by sha or branch/tag name, resolved without the git CLI seeing it as an option."""
    if not REF.fullmatch(name) or ".." in name or name.endswith((".lock", "/")):
        raise InvalidInput(f"{name!r} is not a commit sha or a branch name")
    try:
        found = repo.git.rev_parse("--verify", "-q", "--end-of-options", f"{name}^{{commit}}")
    except git.GitCommandError:
        found = ""
    if not found:
        raise InvalidInput(f"no commit {name!r} in the workspace's repository") from None
    return found


def add_detached_worktree(repo: git.Repo, path: Path, commit: str) -> git.Repo:
    repo.git.worktree("add", "--detach", "--", str(path), commit)
    return open_worktree(Path(repo.common_dir).resolve(), path)


def apply_patch(wt: git.Repo, patch: str) -> None:
    """Apply a unified diff to the worktree and its index (git refuses paths outside the tree)."""
    try:
        wt.git.execute(["git", "apply", "--index", "--whitespace=nowarn", "-"], istream=_Stdin(patch if patch.endswith("\n") else patch + "\n"))
    except git.GitCommandError as exc:
        raise InvalidInput("the patch does not apply to BEST: " + (exc.stderr or "").strip()[-300:]) from None


def pin(repo: git.Repo, ref: str, commit: str) -> None:
    """Keep a candidate's commit reachable (and nameable in a bundle) under refs/kernel-mcp/."""
    repo.git.update_ref(ref, commit)


def bundle(repo: git.Repo, refs: list[str], path: Path) -> bytes:
    repo.git.bundle("create", str(path), *refs)
    return path.read_bytes()


def diff_between(wt: git.Repo, base: str, commit: str) -> str:
    return wt.git.diff("--binary", base, commit, "--", ".", NOT_THE_ATTEMPTS)


def prune_worktrees(repo: git.Repo, under: Path) -> list[str]:
    """Forget the repository's records of the ledger's worktrees in `under` (a folder of the
    server's own) whose folder is gone: what `git worktree prune` does, for those only. `git
    worktree prune` itself would also forget a worktree of the user's whose folder is away for a
    moment (an unmounted drive, a renamed folder), with its HEAD and index. Returns the records."""
    records = Path(repo.common_dir).resolve() / "worktrees"
    own = under.resolve()
    forgotten = []
    for record in sorted(records.iterdir()) if records.is_dir() else []:
        if (record / "locked").exists():
            continue
        try:
            named = Path((record / "gitdir").read_text(errors="replace").strip())
        except OSError:
            continue  # not a record git could use; left to the user
        named = named if named.is_absolute() else record / named
        folder = named.parent.resolve()
        if (folder == own or own in folder.parents) and not named.exists():
            shutil.rmtree(record)
            forgotten.append(record.name)
    return forgotten


# ---- what runs write, and the candidate as it was before its runs ------------------------------
def dirty_state(wt: git.Repo) -> dict[str, tuple[int, int] | None]:
    """Every file of the worktree that git lists (tracked, and new ones it does not ignore) with its
    (mtime, size); None for a tracked one that is missing. Compared before and after a run, it says
    what the run wrote, whatever happens to HEAD meanwhile (another server keeping)."""
    out = wt.git.ls_files("-z", "--cached", "--others", "--exclude-standard")
    state: dict[str, tuple[int, int] | None] = {}
    top = work_tree(wt)
    for rel in out.split("\0"):
        if not rel:
            continue
        try:
            st = (top / rel).lstat()
            state[rel] = (st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            state[rel] = None
    return state


def written_between(before: dict[str, tuple[int, int] | None], after: dict[str, tuple[int, int] | None]) -> set[str]:
    return {p for p in set(before) | set(after) if before.get(p, "absent") != after.get(p, "absent")}


def tracked_in(wt: git.Repo, commit: str, paths: set[str]) -> set[str]:
    if not paths:
        return set()
    listed = wt.git.execute(["git", "ls-tree", "-r", "--name-only", "-z", commit], with_extended_output=False)
    return paths & set(listed.split("\0"))


def snapshot(wt: git.Repo, base: str, leave_out: set[str], message: str) -> str:
    """The worktree as a commit on top of `base` (tracked changes and new files that git does not
    ignore), without touching the worktree's index or branch; `leave_out` (what runs wrote) keeps
    `base`'s version. This commit, not the worktree, is what gets measured and kept."""
    with tempfile.TemporaryDirectory(prefix="kernel-mcp-index-") as tmp:
        index = Path(tmp) / "index"
        env = {"GIT_INDEX_FILE": str(index), "GIT_LITERAL_PATHSPECS": "1"}
        own = Path(wt.git_dir) / "index"
        with wt.git.custom_environment(**env):
            if own.is_file():
                # a copy of the worktree's own index carries its file stats: only changed files are hashed again
                shutil.copy2(own, index)  # with its mtime: git trusts a file stat only if older than the index (racy git)
                wt.git.reset("-q", base, "--", ".")  # index entries only: HEAD stays where it is
            else:
                wt.git.read_tree(base)
            wt.git.add("-A", "--", ".")
            if leave_out:
                listing = Path(tmp) / "leave-out"
                listing.write_bytes(b"\0".join(p.encode() for p in sorted(leave_out)) + b"\0")
                wt.git.reset("-q", base, f"--pathspec-from-file={listing}", "--pathspec-file-nul")
            tree = wt.git.write_tree()
            return wt.git.commit_tree(tree, "-p", base, "-F", "-", istream=_Stdin(message))


SERVERS_OWN = ":(exclude,glob)**/.kernel-mcp/**"  # a state folder of the server's, should one ever lie in a tree


def match_commit(wt: git.Repo, commit: str) -> list[str]:
    """Remove every file of the worktree that `commit` does not hold (ignored ones: bytecode and
    build caches, what earlier runs left; untracked ones left out of the commit; nested
    repositories), so that what runs is the commit's files and nothing else: the candidate's commit
    is what gets kept, so it must be what gets measured. The commit's own files were taken from this
    worktree, so they stay as they are. Returns what was removed, worktree-relative."""
    with tempfile.TemporaryDirectory(prefix="kernel-mcp-index-") as tmp:
        with wt.git.custom_environment(GIT_INDEX_FILE=str(Path(tmp) / "index")):
            wt.git.read_tree(commit)  # an index of exactly the commit: all else is untracked to clean
            out = wt.git.clean("-ffdx", "--", ".", SERVERS_OWN)
    return [line[len("Removing ") :] for line in out.splitlines() if line.startswith("Removing ")]


def file_at(repo: git.Repo, commit: str, rel: str) -> str | None:
    """A file's text at a commit (None when the commit has no such file)."""
    try:
        return repo.git.show(f"{commit}:{rel}", strip_newline_in_stdout=False)
    except git.GitCommandError:
        return None


def tree_of(wt: git.Repo, commit: str) -> str:
    return wt.git.rev_parse(f"{commit}^{{tree}}")


def files_between(wt: git.Repo, base: str, commit: str) -> list[str]:
    listed = wt.git.diff("--name-only", "-z", base, commit, "--", ".", NOT_THE_ATTEMPTS)
    return sorted(p for p in listed.split("\0") if p)


def restore(wt: git.Repo, commit: str, paths: set[str]) -> None:
    """Give tracked files that a run rewrote their content at `commit` back (paths read literally)."""
    if not paths:
        return
    with tempfile.TemporaryDirectory(prefix="kernel-mcp-paths-") as tmp:
        listing = Path(tmp) / "paths"
        listing.write_bytes(b"\0".join(p.encode() for p in sorted(paths)) + b"\0")
        with wt.git.custom_environment(GIT_LITERAL_PATHSPECS="1"):
            wt.git.checkout(commit, f"--pathspec-from-file={listing}", "--pathspec-file-nul")


def branch_head(wt: git.Repo, branch: str) -> str:
    return wt.git.rev_parse("--verify", f"refs/heads/{branch}^{{commit}}")


def advance_branch(wt: git.Repo, branch: str, commit: str, expected: str) -> None:
    """Point the branch at `commit` only if it still points at `expected` (git checks and swaps
    under its own ref lock): a second server keeping at the same moment cannot move BEST twice."""
    try:
        wt.git.update_ref(f"refs/heads/{branch}", commit, expected)
    except git.GitCommandError as exc:
        raise WorkspaceError(f"the experiment's branch {branch} moved while this step ran", hint=(exc.stderr or "").strip()[-200:] or None) from None


def sync_index(wt: git.Repo) -> None:
    """The worktree's index to its HEAD, files untouched (after the branch was moved directly)."""
    wt.git.reset("-q")
