"""Pids across a sealed run's PID namespace, for tests.

A process of a sealed run sees its own PID namespace: its `os.getpid()` names nothing (or another
process) on the host. So a test's script writes `note()`, its namespace and its pid there, and the
test finds the host's pid of that process with `host_pid()`: None when no such process lives (a
namespace whose init ended holds none)."""

from __future__ import annotations

import os


def note() -> str:
    return f"{os.readlink('/proc/self/ns/pid')} {os.getpid()}"


def host_pid(text: str) -> int | None:
    """The host's pid of the process a `note()` (or a bare host pid) names; None if none lives."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    namespace, pid = text.split()
    if namespace == os.readlink("/proc/self/ns/pid"):  # a run without a namespace of its own
        return int(pid) if os.path.exists(f"/proc/{pid}") else None
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry}/ns/pid") != namespace:
                continue
            with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as status:
                for line in status:
                    if line.startswith("NSpid:"):
                        if line.split()[-1] == pid:
                            return int(entry)
                        break
        except OSError:
            continue
    return None
