"""A Python benchmark's fork server: the modules it names imported once, each run a fresh fork.

A PyTorch benchmark spends seconds of every run importing torch (3.7 s of a 6.6-7.3 s run of the
bundled example on an H100) before it touches the GPU, and an evaluation runs it six times or more.
This program, started by the runner in the benchmark's place (the same interpreter, the same sealed
namespaces, boundary and environment), imports the modules `[benchmark] preload` names, once, and then
for every run the server asks for forks a child that runs the benchmark's script as `python script.py
args` would (`__main__`, argv, cwd, environment and its output to the run's own pipes).

Each run is still a process of its own, started from the same clean state: what a run changes in its
memory dies with it. The fork server runs no more of the workspace than the benchmark's own imports
would (the script runs only in the child), and after each run it kills every process left in its PID namespace (kill(-1) there reaches
only the run's processes, never this program nor init) and reaps them as their subreaper, before it
answers: nothing of one run is alive when the next run of either side starts. It refuses to start
outside a PID namespace of its own, where kill(-1) would reach the user's other processes. It is not
dumpable, so a run cannot read its control socket through /proc; a run that kills it fails its side.

Arguments: the control socket's descriptor, the script's folder, the folders the runs may write (JSON), the
modules. Protocol on the control socket: each message is 4 bytes of length
(big-endian) and a JSON object. This program says {"ready": ...} or {"error": ...} once, then answers
each request {"argv": [...], "cwd": ..., "env": {...}} (with the run's stdout and stderr descriptors
attached) with {"status": <wait status>}. The server closing the socket ends it.

Only the standard library (run by the workspace's interpreter, where this package may not be installed).
"""

import sys

# `python -c` puts the working folder, the run's tree, first on sys.path: a `json.py` or `ctypes/` there
# would be what this program imports, and run here, one Landlock layer out of the runs
if sys.path and sys.path[0] in ("", "."):
    del sys.path[0]

import ctypes  # (after the line above, as every import here)
import json
import os
import socket
import struct

PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE = 36, 4
SYS_CREATE_RULESET, SYS_RESTRICT_SELF = 444, 446  # the unified system call table: x86-64 and aarch64
CREATE_RULESET_VERSION = 1
MAKE_BLOCK = 1 << 11  # LANDLOCK_ACCESS_FS_MAKE_BLOCK: the one right the run's own layer takes away
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6
HEADER = struct.Struct(">I")
MAX_MESSAGE = 16 * 2**20  # a request carries the run's environment: generous, but bounded

libc = ctypes.CDLL(None, use_errno=True)


def send(sock: socket.socket, message: dict) -> None:
    data = json.dumps(message).encode()
    sock.sendall(HEADER.pack(len(data)) + data)


def receive(sock: socket.socket) -> tuple[dict | None, list[int]]:
    """One request and the descriptors that came with it; (None, []) once the server has gone."""
    head, fds, _flags, _addr = socket.recv_fds(sock, HEADER.size, 4)
    if not head:
        return None, fds
    while len(head) < HEADER.size:
        more = sock.recv(HEADER.size - len(head))
        if not more:
            return None, fds
        head += more
    (size,) = HEADER.unpack(head)
    if size > MAX_MESSAGE:
        raise ValueError(f"a request of {size} bytes")
    body = b""
    while len(body) < size:
        more = sock.recv(size - len(body))
        if not more:
            return None, fds
        body += more
    return json.loads(body), fds


def exit_code(exc: SystemExit) -> int:
    """What `python script.py` exits with for sys.exit(value)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    print(exc.code, file=sys.stderr)
    return 1


def reseed() -> None:
    """Give the child the fresh random state a new interpreter would have: `random` reseeds itself
    after a fork, NumPy's global generator does not (every run would draw the same inputs)."""
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        try:
            numpy_random.seed()
        except Exception:  # a NumPy without the legacy generator keeps what it has
            pass


class RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


def own_domain() -> None:
    """A Landlock layer of the run's own, nested in the side's domain. Landlock lets a process trace,
    read the descriptors of (/proc/<pid>/fd, pidfd_getfd) and, from ABI 6, signal only processes in its
    own domain or one nested in it, whatever its capabilities (a root server's runs hold them): the
    fork server, one layer out, is beyond the run's reach. The layer takes away only the making of
    block devices, which the run may not do anyway."""
    abi = libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    attr = RulesetAttr(handled_access_fs=MAKE_BLOCK, handled_access_net=0, scoped=SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET if abi >= 6 else 0)
    size = ctypes.sizeof(RulesetAttr) if abi >= 6 else 8  # older kernels know only the first field
    fd = libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if fd < 0 or libc.syscall(SYS_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
        raise OSError(ctypes.get_errno(), "the run's own Landlock layer: " + os.strerror(ctypes.get_errno()))
    os.close(fd)


def child(control: socket.socket, request: dict, out: int, err: int) -> None:
    """In the forked child: become the run, as `python script.py args` starts it, then exit as it would."""
    control.close()  # the server's channel stays the fork server's alone
    own_domain()
    libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
    null = os.open(os.devnull, os.O_RDONLY)
    for fd, target in ((null, 0), (out, 1), (err, 2)):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    argv = request["argv"]
    script = os.path.join(request["cwd"], argv[0])
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.realpath(script))
    reseed()
    code = 0
    try:
        run_as_main(script)
    except SystemExit as exc:
        code = exit_code(exc)
    except BaseException:  # printed and exited with, as the interpreter does
        import traceback

        traceback.print_exc()
        code = 1
    code = finish(code)
    # exit(3), not os._exit: the C library's atexit functions and the libraries' destructors run, as at
    # the end of `python script.py` (a profiler's injected library writes its records there)
    libc.exit(code)


def run_as_main(path: str) -> None:
    """The script as `python script.py` runs it: a fresh __main__ whose __file__ is the absolute path,
    sys.argv[0] as given (runpy.run_path would put the path there)."""
    import importlib.machinery
    import types

    with open(path, "rb") as f:  # bytes: compile reads the encoding declaration, as the interpreter does
        source = f.read()
    code = compile(source, path, "exec")
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
    main.__spec__ = None
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


def finish(code: int) -> int:
    """The interpreter's own shutdown steps that a run may count on: waiting for its threads, its
    atexit functions, flushing its output."""
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except Exception:
            pass
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed stream: nothing left to flush
            code = code or 120
    return code


def reap_all() -> None:
    """Kill what the run left in this namespace and wait until it is gone."""
    try:
        os.kill(-1, 9)
    except ProcessLookupError:
        pass  # nothing left
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def serve(control: socket.socket) -> None:
    while True:
        request, fds = receive(control)
        if request is None:
            return
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            send(control, {"error": f"a request came with {len(fds)} descriptors, not 2"})
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                child(control, request, *fds)
            except BaseException as exc:  # the run could not even start: say why on its stderr
                os.write(2, f"kernel-mcp: the fork server could not start the run: {exc!r}\n".encode())
            os._exit(70)
        for fd in fds:
            os.close(fd)
        while True:
            try:
                _pid, status = os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
        reap_all()
        send(control, {"status": status})


class NothingRunsWrite:
    """While the fork server imports its modules: a module found inside a folder the side's runs may
    write (its tree, its private folder, /dev) is refused, and named. The fork server is one Landlock
    layer out of its runs and holds the control socket: code a run could plant there (a `torch.py` or
    `inspect.py` beside the script, found first through sys.path[0]) would run here, answer for the
    side's runs and outlive them into the other side's. The runs themselves import what they like.

    The interpreter's own installation is exempt: a virtual environment inside the user's checkout (the
    tree of a plain benchmark call, which has no other side) is where torch comes from; the evaluation's
    trees are worktrees, which hold none."""

    def __init__(self, folders: list[str]) -> None:
        self.folders = [os.path.join(os.path.realpath(folder), "") for folder in folders]
        self.installed = {os.path.join(os.path.realpath(prefix), "") for prefix in (sys.prefix, sys.exec_prefix, sys.base_prefix)}
        self.refused: list[str] = []

    def inside(self, place: str) -> bool:
        paths = (os.path.abspath(place), os.path.realpath(place))
        return any(path.startswith(folder) and not any(path.startswith(own) for own in self.installed) for path in paths for folder in self.folders)

    def find_spec(self, name, path=None, target=None):
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        else:
            return None
        for place in [spec.origin, *(spec.submodule_search_locations or [])]:
            if isinstance(place, str) and os.path.isabs(place) and self.inside(place):
                self.refused.append(f"{name} ({place})")
                raise ImportError(f"{name} would be imported from {place}, which the runs may write", name=name)
        return spec


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    script_dir, writable, modules = sys.argv[2], json.loads(sys.argv[3]), sys.argv[4:]
    import importlib
    import traceback  # before sys.path[0] names the script's folder: the server's own imports come from Python's

    if os.getppid() != 1:
        send(control, {"error": "not in a PID namespace of its own: a run's leftovers could not be killed safely"})
        sys.exit(3)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        send(control, {"error": "could not become the subreaper of its runs"})
        sys.exit(3)
    sys.path.insert(0, script_dir)  # as `python script.py` has it, so a module resolves as the run would find it
    guard = NothingRunsWrite(writable)
    sys.meta_path.insert(0, guard)
    for name in modules:
        try:
            importlib.import_module(name)
            if guard.refused:  # caught by the module that tried it: refused all the same
                raise ImportError(f"{guard.refused[0]} is inside what the runs may write")
        except BaseException:  # any failure is the answer, not a crash
            why = traceback.format_exc(limit=-1).strip().splitlines()[-1]
            if guard.refused:
                why += "; the fork server imports nothing a run could change (name only installed modules in [benchmark] preload)"
            send(control, {"error": f"importing {name}: " + why})
            sys.stderr.flush()
            os._exit(3)  # the modules imported so far may have atexit functions: none of them runs
    sys.meta_path.remove(guard)  # the runs import as `python script.py` would
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    threads = sys.modules["threading"].active_count() if "threading" in sys.modules else 1
    send(control, {"ready": True, "modules": modules, "threads": threads})
    serve(control)
    # not the interpreter's shutdown: the preloaded modules' atexit functions belong to the runs (each
    # run's child calls its own copy); here they would run once more, outside any run
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
