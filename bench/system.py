"""What the bench reads from the machine: CPU pinning, and a process's CPU time and memory.

Linux only: pinning is `taskset`, CPU time and memory come from `/proc`. A server counts as
its process and every descendant (a node with several workers is one server).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class Pinning:
    """Command prefixes putting the server and the load generator on different CPUs."""

    server: list[str]
    load: list[str]
    note: str
    server_cpu: int | None = None  # the CPU the server is pinned to


def plan_pinning() -> Pinning:
    taskset = shutil.which("taskset")
    cpus = sorted(os.sched_getaffinity(0))
    if taskset is None:
        return Pinning([], [], "not pinned: taskset not found (Debian package util-linux); "
                               "server and wrk share the CPUs")
    if len(cpus) < 2:
        return Pinning([], [], f"not pinned: only CPU {cpus[0]} is available; "
                               "server and wrk share it")
    server, load = cpus[0], cpus[1]
    note = f"server on CPU {server}, wrk on CPU {load} (taskset)"
    if len(cpus) > 2:
        note += f"; {len(cpus) - 2} more CPU(s) left to the rest"
    return Pinning(["taskset", "-c", str(server)], ["taskset", "-c", str(load)], note, server)


def cpu_model() -> str:
    try:
        for line in (PROC / "cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def process_tree(pid: int) -> list[int]:
    """`pid` and its live descendants."""
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time used so far by `pid` and its descendants."""
    total = 0
    for each in process_tree(pid):
        try:
            fields = (PROC / str(each) / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / _TICKS


def cpu_busy_seconds(cpu: int) -> tuple[float, float]:
    """Time CPU `cpu` has spent running anything (user, system, hard interrupts) and time the
    hypervisor stole from it, from /proc/stat. Soft interrupts are left out: on loopback they
    are mostly the bench's own packets."""
    for line in (PROC / "stat").read_text().splitlines():
        fields = line.split()
        if fields[0] == f"cpu{cpu}":
            user, nice, system, _idle, _iowait, irq, _softirq, steal = map(int, fields[1:9])
            return (user + nice + system + irq) / _TICKS, steal / _TICKS
    raise OSError(f"no cpu{cpu} in /proc/stat")


def _status_kib(pid: int, key: str) -> int:
    for line in (PROC / str(pid) / "status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise OSError(f"no {key} in /proc/{pid}/status")


def rss_kib(pid: int) -> int:
    """Resident memory now (VmRSS) of `pid` and its descendants, in KiB."""
    return sum(_status_kib(each, "VmRSS") for each in process_tree(pid))


def peak_rss_kib(pid: int) -> int:
    """Peak resident memory (VmHWM) since the last `reset_peak_rss`, in KiB."""
    return sum(_status_kib(each, "VmHWM") for each in process_tree(pid))


def reset_peak_rss(pid: int) -> bool:
    """Reset VmHWM to the current RSS (`clear_refs` 5); False when the kernel refuses."""
    try:
        for each in process_tree(pid):
            (PROC / str(each) / "clear_refs").write_text("5")
    except OSError:
        return False
    return True



def thread_cpu_seconds(pid: int) -> dict[int, float]:
    """User plus system CPU time used so far by each live thread of `pid`, by thread id."""
    found = {}
    for task in (PROC / str(pid) / "task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        found[int(task.name)] = (int(fields[11]) + int(fields[12])) / _TICKS
    return found
