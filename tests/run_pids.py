"""Pids across a sealed run's PID namespace, for tests.

A process of a sealed run sees its own PID namespace: its `os.getpid()` names nothing (or another
process) on the host. So a test's script writes a note (`NOTE`, an expression of the script's own
Python): its namespace, its pid there and its start time; the test finds the host's pid of that
process with `host_pid()`: None when no such process lives (a namespace whose init ended holds none).

The start time is what tells the process apart: the kernel gives a new namespace the lowest free inode
number, so a sealed run started after the noted one ended (another test's, in parallel) often has the
same namespace name, and its command the same pid (2), and was taken for the noted process."""

from __future__ import annotations

import os

# clock ticks after boot at which the process started: field 22 of /proc/<pid>/stat, the same from any namespace
START = "open('/proc/self/stat').read().rsplit(')', 1)[1].split()[19]"
NOTE = f"os.readlink('/proc/self/ns/pid') + ' ' + str(os.getpid()) + ' ' + {START}"


def _started(entry: str) -> str | None:
    try:
        with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def host_pid(text: str) -> int | None:
    """The host's pid of the process a note (or a bare host pid) names; None if none lives."""
    fields = text.split()
    if len(fields) == 1 and fields[0].isdigit():
        return int(fields[0])
    if len(fields) < 3:
        raise ValueError(f"a note without its start time: {text!r}")
    namespace, pid, started = fields[:3]
    if namespace == os.readlink("/proc/self/ns/pid"):  # a run without a namespace of its own
        return int(pid) if _started(pid) == started else None
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry}/ns/pid") != namespace:
                continue
            with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as status:
                for line in status:
                    if line.startswith("NSpid:"):
                        if line.split()[-1] == pid and _started(entry) == started:
                            return int(entry)
                        break
        except OSError:
            continue
    return None
