"""The first program of every sealed run: it puts the run in namespaces of its own, then runs it.

Started by the runner as `python -I -S -B seal.py run ...` (isolated: no site, no PYTHON* variables,
nothing imported from the run's folder), in place of the command, it

1. makes a PID and a mount namespace for the run (first in a user namespace of its own where this
   user may not make them otherwise; uid and gid are mapped to themselves, so files are reached with
   the same rights as before);
2. forks the namespace's first process, its init, which mounts a /proc of the namespace over /proc
   (when the runner's probe found this possible), adds it to the run's Landlock ruleset and enters
   the Landlock domain (no mount is possible after that);
3. init forks the command, reaps every process of the namespace that ends, and exits with the
   command's status as soon as the command ends: the kernel then kills everything else in the
   namespace, a double-forked, setsid'd daemon included, before init's parent can see it exit.

A process of the run can neither see nor name a process outside it: kill, prlimit, setpriority
(PRIO_USER too) and /proc reach only the run's own processes. This program (outside the namespace)
waits for init and ends as the command did (the same exit status, or the same signal). If any step
fails the command does not run: exit 126 and a line on stderr, never an unsealed run.

Only the standard library (imported from the server's own Python): the package may be anywhere.
"""

import _signal as signal  # the C module: `signal` would import enum, and every run pays for its start
import ctypes
import errno
import os
import select
import sys

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWIPC = 0x00020000, 0x10000000, 0x20000000, 0x08000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 32, 1 << 12, 1 << 14, 1 << 18
# The kernel's settings under /proc, read-only in the run's /proc as container runtimes make them: a root
# server's runs keep CAP_SYS_ADMIN, and /proc stays writable for the GPU driver, so a run could set
# kernel.core_pattern (a program the kernel runs as root outside every seal), the scheduler's and
# memory's sysctls (BEST's runs slowed after it ends), IRQ affinity or PCI configuration space.
KERNEL_SETTINGS = (b"/proc/sys", b"/proc/sysrq-trigger", b"/proc/irq", b"/proc/bus", b"/proc/fs")
# The machine's shared memory is common to both sides of a comparison: a candidate could leave files in
# /dev/shm (or System V segments) that BEST's runs meet, or fill it under them. Each run gets its own
# (an IPC namespace; a tmpfs on /dev/shm, added to the Landlock domain like its /proc).
SHARED_MEMORY = b"/dev/shm"
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
SYS_ADD_RULE, SYS_RESTRICT_SELF = 445, 446
RULE_PATH_BENEATH = 1
EXIT_NOT_SEALED = 126
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

libc = ctypes.CDLL(None, use_errno=True)  # the interpreter's own C library: no search, no loading


class PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class Refused(Exception):
    def __init__(self, message: str, err: int = 0) -> None:
        super().__init__(message)
        self.errno = err


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise Refused(f"{what}: {os.strerror(err)}", err)


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def enter_namespaces(user: bool) -> None:
    """A PID and a mount namespace for the children of this process; in a user namespace of its own
    first when `user` (an unprivileged user may make the others only there)."""
    if user:
        uid, gid = os.getuid(), os.getgid()
        _check(libc.unshare(CLONE_NEWUSER), "unshare(user namespace)")
        try:
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
            _write("/proc/self/gid_map", f"{gid} {gid} 1\n")
        except OSError as exc:
            raise Refused(f"mapping uid {uid} and gid {gid} into the user namespace: {exc.strerror}") from exc
    _check(libc.unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC), "unshare(PID, mount and IPC namespaces)")


def private_mounts() -> None:
    """In init: what is mounted from here on stays in this namespace."""
    _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "making the mounts private")


def mount_proc() -> None:
    """In init: a /proc that shows the namespace's processes only."""
    _check(libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None), "mounting /proc")


def private_shared_memory() -> None:
    """In init, with its own /proc: a /dev/shm of the run's own (none where the machine has none)."""
    if not os.path.isdir(SHARED_MEMORY):
        return
    _check(libc.mount(b"tmpfs", SHARED_MEMORY, b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=1777"), "mounting a /dev/shm of its own")


def read_only_kernel_settings() -> None:
    """In init, after mount_proc: KERNEL_SETTINGS read-only (one this kernel lacks needs nothing)."""
    for path in KERNEL_SETTINGS:
        if libc.mount(path, path, None, MS_BIND | MS_REC, None) != 0:
            err = ctypes.get_errno()
            if err == errno.ENOENT:
                continue
            raise Refused(f"covering {path.decode()}: {os.strerror(err)}", err)
        _check(libc.mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC, None), f"making {path.decode()} read-only")


# Landlock governs what a run writes into files and folders, not their metadata: a run could chmod,
# chown, utime or setxattr any file it can name (BEST's tree, the user's checkout, the ledger's state,
# every .git), root or not (the user owns them), and so lock the user or the server out of their files,
# make BEST's scripts unrunnable or its build stale. In the run's mount namespace every mount is
# read-only but its own folders (bound over themselves, writable): a metadata change elsewhere is
# refused (EROFS). Landlock still decides what may be written within them. (A rename between two of its
# folders now crosses mounts: EXDEV, as between two file systems.)
SYS_MOUNT_SETATTR, AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY = 442, -100, 0x8000, 0x1


class MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _read_only(path: bytes, read_only: bool) -> None:
    attr = MountAttr(MOUNT_ATTR_RDONLY if read_only else 0, 0 if read_only else MOUNT_ATTR_RDONLY, 0, 0)
    size = ctypes.c_size_t(ctypes.sizeof(attr))
    result = libc.syscall(SYS_MOUNT_SETATTR, ctypes.c_int(AT_FDCWD), path, ctypes.c_uint(AT_RECURSIVE), ctypes.byref(attr), size)
    _check(result, f"making the mounts at {path.decode()} {'read-only' if read_only else 'writable'}")


def read_only_but(writable: list[str]) -> None:
    """In init, before its own /proc and /dev/shm (mounted writable after): every mount read-only, but
    the run's own folders."""
    own = [os.fsencode(os.path.realpath(folder)) for folder in writable]
    for folder in own:
        _check(libc.mount(folder, folder, None, MS_BIND | MS_REC, None), f"binding {folder.decode()}")
    _read_only(b"/", True)
    for folder in own:
        _read_only(folder, False)
    os.chdir(os.getcwd())  # the working folder as the mounts now have it: a folder of its own is the writable bind


def hide_sockets(paths: list[str]) -> None:
    """In init: cover each named Unix socket (other programs' listeners: a tmux server, the user's
    systemd and D-Bus, an ssh-agent, docker) with /dev/null in this mount namespace, so that the run
    cannot connect to one and have it act outside the seal (Landlock does not govern connecting to
    a socket by its path). One gone meanwhile needs no cover; one that cannot be covered refuses the run."""
    for path in paths:
        if libc.mount(b"/dev/null", os.fsencode(path), None, MS_BIND, None) != 0:
            err = ctypes.get_errno()
            if err not in (errno.ENOENT, errno.ENOTDIR):
                raise Refused(f"covering the socket {path!r}: {os.strerror(err)}", err)


# Landlock refuses mount(2) and umount(2) inside a domain but not the newer mount API nor file
# handles: a run that holds CAP_SYS_ADMIN or CAP_DAC_READ_SEARCH (a root server's, which keeps them
# so that a profiler can read the GPU's counters) could clone the root mount without the covers of
# hide_sockets (open_tree), mount the disk anew (fsopen, fsmount) or open a file by its inode
# (open_by_handle_at). The kept CAP_SYS_ADMIN also grants what the dropped capabilities were dropped
# for, and more that outlives the run: bpf(2) (CAP_BPF's, which CAP_SYS_ADMIN implies: a tracing
# program that writes the server's memory, a cgroup program attached for good), swapon and swapoff,
# the machine's hostname and domain name (the run has no UTS namespace of its own), disk quotas, and
# fanotify, whose permission events hold every other process's opens of the files it marks. A seccomp
# filter refuses exactly those system calls, with EPERM.
SECCOMP_SET_MODE_FILTER, SYS_SECCOMP = 1, {"x86_64": 317, "aarch64": 277}
MOUNT_API = (428, 429, 430, 431, 432, 433, 442)  # open_tree, move_mount, fsopen, fsconfig, fsmount, fspick, mount_setattr: one number on every arch
QUOTACTL_FD = 443  # one number on every arch too
# open_by_handle_at, bpf, swapon, swapoff, sethostname, setdomainname, quotactl, fanotify_init: per arch
BEYOND_THE_RUN = {
    "x86_64": (304, 321, 167, 168, 170, 171, 179, 300),
    "i386": (342, 357, 87, 115, 74, 121, 131, 338),
    "aarch64": (265, 280, 224, 225, 161, 162, 60, 262),
}
_X86_64 = (*MOUNT_API, QUOTACTL_FD, *BEYOND_THE_RUN["x86_64"])
DENIED = {  # AUDIT_ARCH_* -> the numbers refused there
    0xC000003E: (*_X86_64, *(n | 0x40000000 for n in _X86_64)),  # x86-64 (and its x32 numbers)
    0x40000003: (*MOUNT_API, QUOTACTL_FD, *BEYOND_THE_RUN["i386"]),  # i386 programs on x86-64
    0xC00000B7: (*MOUNT_API, QUOTACTL_FD, *BEYOND_THE_RUN["aarch64"]),  # aarch64
}


class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(SockFilter))]


def _filter_program() -> list[tuple[int, int, int, int]]:
    """The seccomp program as (code, jt, jf, k): per arch, its numbers refused with EPERM; all else allowed.

    ld arch; then per arch: jeq ARCH ? next : next block; ld nr; jeq n ? deny : next ...; ret allow
    ret allow (an arch not listed); deny: ret ERRNO(EPERM)
    """
    ld_w_abs, jeq_k, ret_k = 0x20, 0x15, 0x06
    allow, deny = 0x7FFF0000, 0x00050000 | errno.EPERM
    deny_at = 1 + sum(len(numbers) + 3 for numbers in DENIED.values()) + 1  # after every block and the final allow
    program = [(ld_w_abs, 0, 0, 4)]  # seccomp_data.arch
    for arch, numbers in DENIED.items():
        program.append((jeq_k, 0, len(numbers) + 2, arch))  # not this arch: past ld, the tests and the allow
        program.append((ld_w_abs, 0, 0, 0))  # seccomp_data.nr
        program += [(jeq_k, deny_at - (len(program) + i) - 1, 0, n) for i, n in enumerate(numbers)]
        program.append((ret_k, 0, 0, allow))
    program.append((ret_k, 0, 0, allow))
    assert len(program) == deny_at
    return [*program, (ret_k, 0, 0, deny)]


def denial_filter() -> tuple[int, SockFprog]:
    """The seccomp system call's number here and the filter above, made ahead (a forked child of the
    server, without namespaces, installs it with nothing more to allocate)."""
    nr = SYS_SECCOMP.get(os.uname().machine)
    if nr is None:
        raise Refused(f"no seccomp filter for this machine ({os.uname().machine}): the mount API, bpf, swap and the hostname would stay open to the run")
    steps = _filter_program()
    filters = (SockFilter * len(steps))(*(SockFilter(*step) for step in steps))
    prog = SockFprog(len(steps), filters)
    return nr, prog


def install_filter(nr: int, prog: SockFprog) -> None:
    """In the run's first process, after no_new_privs: the filter, passed to every process it starts."""
    _check(libc.syscall(nr, ctypes.c_uint(SECCOMP_SET_MODE_FILTER), ctypes.c_uint(0), ctypes.byref(prog)), "seccomp filter (DENIED)")


# Capabilities a root run keeps though no benchmark, compiler or profiler needs them, and with which it
# reaches past every other boundary: CAP_SYS_TIME slews the clock the server's own timings are read by
# (adjtimex: a run 10% slower in wall time looks 10% faster to the server and to the benchmark's timer
# alike), CAP_SYS_MODULE and CAP_BPF put code in the kernel, CAP_SYS_RAWIO reaches I/O ports and
# physical memory, CAP_SYS_NICE and CAP_SYS_RESOURCE raise the run's priority and limits over the other
# side's, CAP_SYS_BOOT restarts the machine. Dropped from the bounding set (what an exec may grant: all of
# it for root) and from the sets the process holds. CAP_SYS_ADMIN and CAP_PERFMON stay: GPU profilers read
# counters with them.
DROPPED_CAPABILITIES = {
    9: "CAP_LINUX_IMMUTABLE", 12: "CAP_NET_ADMIN", 16: "CAP_SYS_MODULE", 17: "CAP_SYS_RAWIO", 20: "CAP_SYS_PACCT",
    22: "CAP_SYS_BOOT", 23: "CAP_SYS_NICE", 24: "CAP_SYS_RESOURCE", 25: "CAP_SYS_TIME", 26: "CAP_SYS_TTY_CONFIG",
    27: "CAP_MKNOD", 30: "CAP_AUDIT_CONTROL", 31: "CAP_SETFCAP", 32: "CAP_MAC_OVERRIDE", 33: "CAP_MAC_ADMIN",
    34: "CAP_SYSLOG", 35: "CAP_WAKE_ALARM", 36: "CAP_BLOCK_SUSPEND", 39: "CAP_BPF", 40: "CAP_CHECKPOINT_RESTORE",
}  # fmt: skip
PR_CAPBSET_READ, PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 23, 24, 47, 4
CAPABILITY_VERSION_3 = 0x20080522


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> None:
    """In the run's first process, after its domain: DROPPED_CAPABILITIES gone for good. A process
    that may not drop them from the bounding set holds none of them (no CAP_SETPCAP) and, with
    no_new_privs, gains none by exec; a root one that still could is refused."""
    for cap in DROPPED_CAPABILITIES:
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL: a capability this kernel does not know
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header, data = CapHeader(CAPABILITY_VERSION_3, 0), (CapData * 2)()
    _check(libc.capget(ctypes.byref(header), data), "capget")
    for cap in DROPPED_CAPABILITIES:
        word, bit = divmod(cap, 32)
        for kind in ("effective", "permitted", "inheritable"):
            setattr(data[word], kind, getattr(data[word], kind) & ~(1 << bit))
    _check(libc.capset(ctypes.byref(header), data), "capset")
    kept = [name for cap, name in DROPPED_CAPABILITIES.items() if libc.prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1]
    if kept and os.geteuid() == 0:
        raise Refused("root keeps " + ", ".join(kept) + " in its bounding set")


def enter_landlock(ruleset: int, rights: int, proc: bool) -> None:
    """In init: the run's Landlock domain (the ruleset the server made), the new /proc and /dev/shm
    added to it (the server's rules name the machine's, which these mounts cover)."""
    mounted = [b"/proc", SHARED_MEMORY] if proc else []
    for folder in mounted:
        if folder == SHARED_MEMORY and not os.path.isdir(folder):
            continue
        path_fd = os.open(folder, os.O_PATH | os.O_CLOEXEC | os.O_DIRECTORY)
        try:
            rule = PathBeneath(allowed_access=rights, parent_fd=path_fd)
            _check(
                libc.syscall(SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0)),
                f"landlock_add_rule {folder.decode()}",
            )
        finally:
            os.close(path_fd)
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    install_filter(*denial_filter())  # DENIED, for every process the run starts
    _check(libc.syscall(SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)), "landlock_restrict_self")
    os.close(ruleset)


def _original_environ() -> dict[bytes, bytes]:
    """The environment exactly as the runner gave it (Python may have added LC_CTYPE to its own)."""
    with open("/proc/self/environ", "rb") as f:
        entries = f.read().split(b"\0")
    env = {}
    for entry in entries:
        name, eq, value = entry.partition(b"=")
        if eq and name:
            env[name] = value
    return env


def _exec_command(argv: list[str], env: dict[bytes, bytes]) -> None:
    """In the command's process: signals as a fresh program expects them, then the command."""
    for sig in (*FORWARDED, signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    try:
        os.execve(argv[0], argv, env)
    except OSError as exc:
        os.write(2, f"kernel-mcp: could not start {argv[0]}: {exc.strerror}\n".encode())
    os._exit(127)


def _forward_to(pid: int):
    def forward(sig: int, _frame) -> None:
        try:
            os.kill(pid, sig)
        except OSError:
            pass  # nobody left to tell

    return forward


def init(argv: list[str], env: dict[bytes, bytes], status_w: int) -> int:
    """The namespace's process 1: start the command, reap everything, return the command's status."""
    command = os.fork()
    if command == 0:
        os.close(status_w)
        _exec_command(argv, env)
    for sig in FORWARDED:  # a signal to init (the runner's SIGTERM) goes to every process of the run
        signal.signal(sig, _forward_to(-1))
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 0
        if pid == command:
            os.write(status_w, str(status).encode())
            return status


def _end_as(status: int) -> None:
    """End this process as the command ended: its exit code, or the signal that killed it."""
    if os.WIFEXITED(status):
        os._exit(os.WEXITSTATUS(status))
    sig = os.WTERMSIG(status)
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))  # no core of this program
    signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)


def refuse(why: str) -> None:
    os.write(2, f"kernel-mcp: could not seal the run ({why}); the command did not run\n".encode())
    os._exit(EXIT_NOT_SEALED)


def run(ruleset: int, rights: int, user: bool, proc: bool, sockets: list[str], writable: list[str], argv: list[str]) -> None:
    env = _original_environ()
    try:
        enter_namespaces(user)
    except Refused as exc:
        refuse(str(exc))
    alive_r, alive_w = os.pipe()  # init sees EOF here once this process is gone
    status_r, status_w = os.pipe()
    child = os.fork()
    if child == 0:  # pid 1 of the new namespace
        os.close(alive_w)
        os.close(status_r)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # this program killed: init, and so the namespace, die
        if select.select([alive_r], [], [], 0)[0]:
            os._exit(137)  # it died before the line above
        try:
            private_mounts()
            if proc:  # (the machine's /proc stays writable for the GPU driver where the run gets none of its own)
                read_only_but(writable)
                mount_proc()
                read_only_kernel_settings()
                private_shared_memory()
            hide_sockets(sockets)
            enter_landlock(ruleset, rights, proc)
            drop_capabilities()
        except (Refused, OSError) as exc:
            refuse(str(exc))
        os._exit(0 if init(argv, env, status_w) == 0 else 1)  # exit code unused: the status went through the pipe
    os.close(alive_r)
    os.close(status_w)
    os.close(ruleset)
    for sig in FORWARDED:
        signal.signal(sig, _forward_to(child))
    while True:
        try:
            _, init_status = os.waitpid(child, 0)
            break
        except ChildProcessError:
            init_status = 0
            break
    reported = os.read(status_r, 64)
    _end_as(int(reported) if reported else init_status)  # no report: init refused (126) or was killed


def probe() -> dict:
    import json
    import socket  # noqa: F401  (here, before the namespaces: a server that reads its Python by a capability reads no more inside)
    import tempfile  # noqa: F401

    """What this machine allows (run once per server, without Landlock): which namespaces a run
    gets, whether its own /proc can be mounted, or why not."""
    # (no no_new_privs here: the server's reaper takes a child with it for a sealed run's escapee)
    user = False
    try:
        try:
            enter_namespaces(False)
        except Refused as first:
            if first.errno not in (errno.EPERM, errno.EACCES):
                raise
            user = True
            try:
                enter_namespaces(True)
            except Refused as second:
                raise Refused(f"{first}; in a user namespace of its own: {second}") from None
    except Refused as exc:
        return {"ok": False, "why": str(exc)}
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(r)
        answer: dict[str, int | str | None] = {"pid": os.getpid()}
        try:
            private_mounts()
            mount_proc()
            read_only_kernel_settings()
            private_shared_memory()
            answer["proc_self"] = os.readlink("/proc/self")
        except (Refused, OSError) as exc:
            answer["proc_error"] = str(exc)
        try:
            answer["sockets_error"] = _try_hiding_a_socket()
        except Exception as exc:  # whatever it was, runs are told sockets stay reachable, and why
            answer["sockets_error"] = f"{type(exc).__name__}: {exc}"
        os.write(w, json.dumps(answer).encode())
        os._exit(0)
    os.close(w)
    os.waitpid(child, 0)
    seen = json.loads(os.read(r, 4096) or b"{}")
    if seen.get("pid") != 1:
        return {"ok": False, "why": f"the namespace's first process is not pid 1 (it is {seen.get('pid')})"}
    proc_ok = seen.get("proc_self") == "1"
    return {
        "ok": True,
        "user": user,
        "proc": proc_ok,
        "proc_why": None if proc_ok else seen.get("proc_error", f"/proc/self read {seen.get('proc_self')!r}"),
        "sockets": seen.get("sockets_error", "no answer") is None,
        "sockets_why": seen.get("sockets_error"),
    }


def _try_hiding_a_socket() -> str | None:
    """Whether a socket can be covered here as each run covers others' (None), or why not."""
    import socket
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kmcp-probe-") as folder:
        path = os.path.join(folder, "s")
        listener = socket.socket(socket.AF_UNIX)
        try:
            listener.bind(path)
            listener.listen(1)
            hide_sockets([path])
            try:
                with socket.socket(socket.AF_UNIX) as client:
                    client.connect(path)
                return "a covered socket still accepted a connection"
            except OSError:
                return None
            finally:
                libc.umount2(os.fsencode(path), 0)
        finally:
            listener.close()


def main(args: list[str]) -> None:
    if args[:1] == ["probe"]:
        import json

        print(json.dumps(probe()), flush=True)
        return
    usage = "usage: seal.py run RULESET_FD RIGHTS USER(0|1) PROC(0|1) N SOCKET_1..SOCKET_N M WRITABLE_1..WRITABLE_M EXECUTABLE [ARG...]"
    if len(args) < 8 or args[0] != "run" or not args[5].isdigit():
        refuse(usage)
    n = int(args[5])
    if len(args) < 8 + n or not args[6 + n].isdigit():
        refuse(usage)
    m = int(args[6 + n])
    if len(args) < 8 + n + m:
        refuse(usage)
    sockets, writable = args[6 : 6 + n], args[7 + n : 7 + n + m]
    run(int(args[1]), int(args[2]), args[3] == "1", args[4] == "1", sockets, writable, args[7 + n + m :])


if __name__ == "__main__":
    main(sys.argv[1:])
