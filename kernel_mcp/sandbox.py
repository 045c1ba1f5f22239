"""The boundary around every run of workspace code: the kernel's Landlock, without root.

The code being judged is the agent's, so its processes must not reach what judges it: BEST's tree,
the ledger's state under `.kernel-mcp/`, every `.git`, the user's checkout. A run gets a Landlock
domain (Linux 5.13+, ABI 2+ for renames) in which it may write only beneath the folders its
`Boundary` names (its own tree, a private temporary folder, private compiler and framework caches,
and in `/dev` the GPU's device files and a few more, `device_rules`); it reads and executes everything as before, so toolchains,
Python environments and the profilers work unchanged. Where the kernel has ABI 6, the domain is
also scoped: it cannot signal a process outside it (BEST's run, the server). Landlock already keeps
ptrace and `/proc/<pid>/mem` of outside processes out of its reach.

Landlock does not govern connecting to a Unix socket by its path: each run's mount namespace covers the
sockets other programs have bound when it starts (seal.hide_sockets), and a seccomp filter refuses the
new mount API and file handles, with which a run that holds capabilities (a root server's) could reach
past those covers.

Landlock does not govern metadata either (chmod, chown, utime, xattrs): each run's mount namespace is
read-only but for its own folders (seal.read_only_but), and a root run's kept CAP_SYS_ADMIN is denied the
system calls that reach beyond the run (seal.DENIED: bpf, swap, hostname, quotas, fanotify). Ioctls on
device files are Landlock's where the kernel has ABI 5: allowed only on the devices a run may write.

The ruleset is built in the server (paths opened, rules added); the domain is entered by the run's
first process and passes to every process it starts, a double-forked daemon included, and cannot
be left.

Landlock does not cover processes: a run of the same uid could prlimit, renice or kill the server
or BEST's run, and a daemon it left could outlive it. So each run also gets namespaces of its own
(`seal.py`, the program the runner starts in its place): a PID namespace, whose init exits with the
command and so has the kernel kill all the run left behind; a mount namespace with its own /proc, so
that the run sees no process but its own; and, for a user without the privilege to make those, a
user namespace that maps the uid and gid to themselves (files are reached as before). The Landlock
domain is entered inside, after the mount. Where the kernel allows no namespaces (`isolation()`
says why; `KERNEL_MCP_SEAL_NAMESPACES=off` turns them off), the forked child enters the domain
before exec as it always did, and the server's containment sweeps what the run left.

Where the kernel offers no Landlock (an old kernel, gVisor), `available()` says why, and every run
goes unsealed: the ledger says so in each decision and keeps only when the user opted in.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from kernel_mcp import seal

# linux/landlock.h; the system call numbers are the same on x86-64 and aarch64 (the unified table)
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

_WRITE_FILE = 1 << 1
_REMOVE_DIR, _REMOVE_FILE = 1 << 4, 1 << 5
_MAKE_CHAR, _MAKE_DIR, _MAKE_REG, _MAKE_SOCK, _MAKE_FIFO, _MAKE_BLOCK, _MAKE_SYM = (1 << n for n in range(6, 13))
_REFER = 1 << 13  # ABI 2: moving a file between folders
_TRUNCATE = 1 << 14  # ABI 3
_IOCTL_DEV = 1 << 15  # ABI 5: ioctl(2) on a device file, which Landlock otherwise allows on one opened for reading
_FILE_RIGHTS = _WRITE_FILE | _TRUNCATE | _IOCTL_DEV  # the only rights of those handled that a rule on a file (not a folder) may hold
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

SEAL_ENV = "KERNEL_MCP_SEAL"  # "off" in the server's own environment: runs go unsealed (to measure what sealing costs)
NAMESPACES_ENV = "KERNEL_MCP_SEAL_NAMESPACES"  # "off": Landlock only, no namespaces of a run's own
SEAL_PROGRAM = Path(__file__).with_name("seal.py")  # a run's first process (see seal.py)
MIN_ABI = 2  # ABI 1 refuses every rename across folders, which compilers and pip-style tools do
EXIT_NOT_SEALED = 126  # the child exits so, and says why, if the domain could not be entered

# Caches the toolchains and frameworks write by default under $HOME or /tmp; pointed into the
# side's private cache so a run neither fails on a read-only home nor shares a cache with the other side.
CACHE_ENV = {
    "XDG_CACHE_HOME": "xdg",
    "TRITON_CACHE_DIR": "triton",
    "TORCH_EXTENSIONS_DIR": "torch_extensions",
    "TORCHINDUCTOR_CACHE_DIR": "torchinductor",
    "CUDA_CACHE_PATH": "nv-compute",
    "MPLCONFIGDIR": "matplotlib",
    "NUMBA_CACHE_DIR": "numba",
    "CUPY_CACHE_DIR": "cupy",
    "MIOPEN_USER_DB_PATH": "miopen",
    "MIOPEN_CUSTOM_CACHE_DIR": "miopen",
}
TEMP_ENV = ("TMPDIR", "TMP", "TEMP")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _load_libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None


LIBC = _load_libc()  # loaded before any fork: the child hooks (here and in containment) must not load libraries


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 where there is none (or it is disabled)."""
    if LIBC is None:
        return 0
    version = LIBC.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def available() -> str | None:
    """None when runs can be sealed here, else why not (for doctor and every decision)."""
    if os.environ.get(SEAL_ENV, "").lower() == "off":
        return f"sealing is turned off ({SEAL_ENV}=off in the server's environment)"
    abi = landlock_abi()
    if abi == 0:
        return "the kernel offers no Landlock (too old, disabled, or a sandboxed kernel such as gVisor)"
    if abi < MIN_ABI:
        return f"the kernel's Landlock is ABI {abi}; runs need ABI {MIN_ABI} or newer (renames across folders)"
    return None


@dataclass(frozen=True)
class Isolation:
    """The namespaces a sealed run gets here."""

    user: bool  # a user namespace of its own too (the server's user may not make the others without one)
    proc: bool  # its own /proc (else the machine's: every process visible, some entries writable)
    proc_why: str | None = None  # why not
    sockets: bool = False  # other programs' Unix sockets covered in its mount namespace (seal.hide_sockets)
    sockets_why: str | None = None  # why not

    def describe(self) -> str:
        text = "own user, PID and mount namespaces" if self.user else "own PID and mount namespaces"
        text += " and System V IPC"
        if self.proc:
            text += "; its own /proc and /dev/shm; every other mount read-only but its own folders"
        else:
            text += (
                f"; /proc is the machine's ({self.proc_why}): the run sees every process there and can write "
                "some entries of this user's (autogroup nice, oom_score_adj)"
            )
        if self.sockets:
            # by path, as bound when the run starts: one bound later, rebound, renamed, linked, bound by a relative
            # path or in another network namespace is not in that list (Landlock scopes path sockets only from ABI 9)
            return text + "; other programs' Unix sockets covered as bound at its start (not ones bound later)"
        return text + (
            f"; other programs' Unix sockets reachable ({self.sockets_why}): a daemon of this user that "
            "runs what it is sent (tmux, systemd --user) would act outside the seal"
        )


def _seal_argv(*args: str) -> list[str]:
    # isolated (-I: no PYTHON* variables, nothing imported from the run's folder), no site, no bytecode written
    return [sys.executable, "-I", "-S", "-B", str(SEAL_PROGRAM), *args]


@functools.lru_cache(maxsize=1)
def _probe() -> tuple[Isolation | None, str | None]:
    """Once per server: a throwaway process tries what each run's first process will do."""
    if not sys.executable or LIBC is None:
        return None, "no Python executable or C library to start a run's first process with"
    try:
        done = subprocess.run(
            _seal_argv("probe"), capture_output=True, text=True, timeout=30, cwd="/", check=False, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        )
        answer = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        return None, f"the namespace probe failed: {exc}"
    if not answer.get("ok"):
        return None, f"the kernel refused them: {answer.get('why')}"
    return Isolation(
        user=bool(answer["user"]),
        proc=bool(answer["proc"]),
        proc_why=answer.get("proc_why"),
        sockets=bool(answer.get("sockets")),
        sockets_why=answer.get("sockets_why"),
    ), None


def isolation() -> tuple[Isolation | None, str | None]:
    """The namespaces each sealed run gets here, or None and why it gets none."""
    if os.environ.get(NAMESPACES_ENV, "").lower() == "off":
        return None, f"turned off ({NAMESPACES_ENV}=off in the server's environment)"
    return _probe()


def mechanism() -> str:
    """How runs are sealed here, as the answers (and every decision) say it."""
    abi = landlock_abi()
    why = available()
    if why:
        return f"unsealed: {why}"
    text = f"Landlock ABI {abi}" + (" (signals and abstract sockets scoped)" if abi >= 6 else "")
    iso, missing = isolation()
    if iso is None:
        return text + (
            f"; NO namespaces of its own ({missing}): a run can reach other processes of this user "
            "(prlimit, setpriority, /proc) and their Unix sockets, and what it leaves is killed by the "
            "server after it ends"
        )
    return text + "; " + iso.describe()


def _write_rights(abi: int) -> int:
    rights = _WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE_CHAR | _MAKE_DIR | _MAKE_REG | _MAKE_SOCK | _MAKE_FIFO | _MAKE_BLOCK | _MAKE_SYM
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    if abi >= 5:
        # a device opened for reading is open to its ioctls, which write as much as a write does: a root
        # run re-reads or flushes the machine's disk (BLKFLSBUF: BEST's files read cold), attaches a loop
        # device that outlives it, or pushes keystrokes into a console's shell (TIOCSTI: commands run as
        # root outside every seal). Ioctls stay open only on the devices a run may write (device_rules).
        rights |= _IOCTL_DEV
    return rights


@dataclass(frozen=True)
class Boundary:
    """What one run may write: every folder in `writable` (and beneath it); `env` points its
    temporary files and caches there. Everything else it may read and run, never change."""

    writable: tuple[Path, ...]
    env: Mapping[str, str] = field(default_factory=dict)

    def with_writable(self, *folders: Path) -> Boundary:
        return Boundary(writable=self.writable + tuple(folders), env=self.env)


# Always writable: /proc, which the NVIDIA driver writes while cuInit runs (without it: error 304, seen
# on an H200 node). /proc/<pid>/mem of a process outside the domain stays out of reach: Landlock scopes
# ptrace. A run with namespaces gets a /proc of its own (seal.py adds it to the ruleset), which shows only
# its processes; this rule then covers only the machine's /proc, which the run cannot reach by that path.
ALWAYS_WRITABLE = (Path("/proc"),)

# /dev only where a run has business (device_rules): the GPU's device files, the harmless character
# devices and the shared-memory folders. All of /dev let a root run (a root server's runs are root) open
# the machine's disk (/dev/vda) or a loop device for writing, and so change any file beneath every
# boundary (BEST's tree, the ledger's objects), or write the kernel's log (/dev/kmsg), a console or
# cpu_dma_latency (a machine-wide power setting, felt by the other side's timings too).
DEV = Path("/dev")
DEVICE_FILES = frozenset({"null", "zero", "full", "random", "urandom", "tty", "kfd"})  # /dev/kfd: ROCm's compute device
DEVICE_FOLDERS = frozenset({"shm", "mqueue", "hugepages", "dri", "infiniband"})  # shared memory; AMD's render nodes; RDMA (NCCL, RCCL)
GPU_DEVICE_PREFIX = "nvidia"  # nvidiactl, nvidia0.., nvidia-uvm(-tools), nvidia-modeset, the nvidia-caps folder


def device_rules(dev: Path = DEV) -> list[tuple[Path, bool]]:
    """The entries of `dev` a run may write, each with whether it is a folder. A block device is
    never one, whatever its name; a link is not followed here (the kernel checks the file it names)."""
    rules: list[tuple[Path, bool]] = []
    try:
        names = sorted(os.listdir(dev))
    except OSError:
        return rules
    for name in names:
        try:
            mode = os.lstat(dev / name).st_mode
        except OSError:
            continue  # gone meanwhile
        gpu = name.startswith(GPU_DEVICE_PREFIX)
        if stat.S_ISDIR(mode) and (name in DEVICE_FOLDERS or gpu):
            rules.append((dev / name, True))
        elif stat.S_ISCHR(mode) and (name in DEVICE_FILES or gpu):
            rules.append((dev / name, False))
    return rules


# A Unix socket's path holds at most 107 bytes, and programs make theirs in the temporary folder
# (Python's multiprocessing: <tmp>/pymp-XXXXXXXX/listener-XXXXXXXX, 34 more): a run whose private
# temporary folder is longer than this gets a short one in the user's own temporary folder instead.
SOCKET_ROOM = 64


def private_boundary(tree: Path, private: Path, extra: Iterable[Path] = ()) -> Boundary:
    """A run in `tree` with `private` as its own temporary folder and caches (made here); the
    temporary folder is `private`/tmp, or a link there names a short one (see SOCKET_ROOM)."""
    tmp, cache = private / "tmp", private / "cache"
    for folder in [private, *(cache / sub for sub in set(CACHE_ENV.values()))]:
        folder.mkdir(parents=True, exist_ok=True)
    writable: tuple[Path, ...] = (tree, private)
    if len(os.fsencode(tmp)) > SOCKET_ROOM:
        short = Path(tempfile.mkdtemp(prefix="kmcp-"))  # made 0700, under TMPDIR: where the user keeps temporary files
        try:
            tmp.symlink_to(short, target_is_directory=True)  # so that the private folder's removal finds it (`side`)
        except BaseException:
            short.rmdir()
            raise
        tmp, writable = short, (*writable, short)
    else:
        tmp.mkdir(exist_ok=True)
    env: dict[str, str] = {name: str(tmp) for name in TEMP_ENV}
    for name, sub in CACHE_ENV.items():
        env[name] = str(cache / sub)
    return Boundary(writable=(*writable, *extra), env=env)


def remove_private(private: Path) -> None:
    """A private folder and the short temporary folder its `tmp` link names, if it has one."""
    link = private / "tmp"
    if link.is_symlink():
        target = Path(os.readlink(link))
        if target.name.startswith("kmcp-") and target.parent == Path(tempfile.gettempdir()):  # only what private_boundary made
            shutil.rmtree(target, ignore_errors=True)
    shutil.rmtree(private, ignore_errors=True)


class Sealing:
    """A ruleset made in the server for one command: `fd` goes to the child. With namespaces
    (`isolation`), `argv` starts seal.py in the command's place, which enters the domain inside them;
    without, `hook` enters it in the forked child."""

    def __init__(self, boundary: Boundary) -> None:
        if LIBC is None:
            raise OSError(errno.ENOSYS, "no C library to reach Landlock")
        self.isolation, _ = isolation()
        abi = landlock_abi()
        handled = _write_rights(abi)
        # device files are handled and granted nowhere: a root run (CAP_MKNOD) could make a raw disk's or
        # /dev/mem's node in its tree or in the machine's /dev (where it outlives the run) and write through it
        self.rights = rights = handled & ~(_MAKE_CHAR | _MAKE_BLOCK)
        # scoped (ABI 6): no signal to, and no connection to an abstract Unix socket of, anything outside the run
        attr = _RulesetAttr(handled_access_fs=handled, handled_access_net=0, scoped=_SCOPE_SIGNAL | _SCOPE_ABSTRACT_UNIX_SOCKET if abi >= 6 else 0)
        size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else 8  # older kernels know only the first field
        fd = LIBC.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
        if fd < 0:
            raise OSError(ctypes.get_errno(), "landlock_create_ruleset: " + os.strerror(ctypes.get_errno()))
        self.fd = int(fd)
        self.own = list(boundary.writable)  # the run's own folders: a socket there is its own (not /dev: /dev/shm is the machine's)
        try:
            for folder in [*boundary.writable, *ALWAYS_WRITABLE]:
                self._allow(folder, rights)
            for entry, folder_rule in device_rules():
                try:
                    self._allow(entry, rights if folder_rule else rights & _FILE_RIGHTS, folder_rule)
                except FileNotFoundError:
                    continue  # removed since it was listed
        except BaseException:
            os.close(self.fd)
            raise

    def _allow(self, folder: Path, rights: int, is_folder: bool = True) -> None:
        path_fd = os.open(folder, os.O_PATH | os.O_CLOEXEC | (os.O_DIRECTORY if is_folder else os.O_NOFOLLOW))
        try:
            rule = _PathBeneathAttr(allowed_access=rights, parent_fd=path_fd)
            if LIBC.syscall(_SYS_ADD_RULE, ctypes.c_int(self.fd), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                raise OSError(ctypes.get_errno(), f"landlock_add_rule {folder}: " + os.strerror(ctypes.get_errno()))
        finally:
            os.close(path_fd)

    def argv(self, executable: str, args: list[str]) -> list[str]:
        """What the runner starts: the command itself, or seal.py with it where runs get namespaces."""
        if self.isolation is None:
            return [executable, *args]
        flags = ("1" if self.isolation.user else "0", "1" if self.isolation.proc else "0")
        sockets = others_sockets(self.own) if self.isolation.sockets else []
        own = [os.fspath(folder) for folder in self.own]  # writable mounts: every other one is read-only (seal.read_only_but)
        return _seal_argv("run", str(self.fd), str(self.rights), *flags, str(len(sockets)), *sockets, str(len(own)), *own, executable, *args)

    def hook(self) -> Callable[[], None]:
        """Runs in the forked child, before exec: no new privileges, then the domain (where seal.py
        enters it, later, only the first). A child that cannot exits at once: a run is never
        silently unsealed."""
        libc, fd = LIBC, self.fd
        message = b"kernel-mcp: could not enter the run's Landlock domain; the command did not run\n"
        if self.isolation is not None:

            def no_new_privs() -> None:
                if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                    os.write(2, message)
                    os._exit(EXIT_NOT_SEALED)

            return no_new_privs
        try:
            seccomp, denial = seal.denial_filter()  # made here, in the server: the child only installs it
        except seal.Refused as exc:
            raise OSError(errno.ENOSYS, str(exc)) from None

        def enter() -> None:
            if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
                os.write(2, message)
                os._exit(EXIT_NOT_SEALED)
            os.close(fd)  # the domain is entered; the program itself has no use for the ruleset
            try:
                seal.install_filter(seccomp, denial)  # what the kept CAP_SYS_ADMIN reaches beyond the run (seal.DENIED)
                seal.drop_capabilities()
            except (seal.Refused, OSError):
                os.write(2, b"kernel-mcp: could not drop the run's capabilities or filter its system calls; the command did not run\n")
                os._exit(EXIT_NOT_SEALED)

        return enter

    def close(self) -> None:
        os.close(self.fd)


def others_sockets(writable: Iterable[Path]) -> list[str]:
    """The Unix sockets bound by a path on this machine now (the kernel's list for the server's network
    namespace) that this user could connect to, outside the run's writable folders: the ones its
    mount namespace covers. A path bound relative to some folder cannot be found, and is left out."""
    try:
        with open("/proc/net/unix", "rb") as table:
            lines = table.read().splitlines()[1:]
    except OSError:
        return []
    roots = [os.fsencode(os.path.realpath(folder)).rstrip(b"/") + b"/" for folder in writable]
    found: list[str] = []
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) < 8 or not fields[7].startswith(b"/"):
            continue  # unbound, abstract (the Landlock scope covers those) or relative
        path = fields[7]
        if any(p.startswith(root) for p in (path, os.path.realpath(path)) for root in roots):
            continue
        try:
            if stat.S_ISSOCK(os.lstat(path).st_mode) and os.access(path, os.W_OK):
                found.append(os.fsdecode(path))
        except (OSError, ValueError):
            continue
    return sorted(set(found))


PRIVATE_DIR = "sandbox"  # under the workspace's state folder: one private folder per side of a run


@contextmanager
def side(tree: Path, state_dir: Path, key: str, extra: Iterable[Path] = ()) -> Iterator[Boundary]:
    """The boundary of one side of a run (`key` names it, e.g. '<run id>-candidate'): `tree` and a
    private folder for its temporary files and caches, removed when the block ends."""
    private = state_dir / PRIVATE_DIR / key
    try:
        yield private_boundary(tree, private, extra)
    finally:
        remove_private(private)
