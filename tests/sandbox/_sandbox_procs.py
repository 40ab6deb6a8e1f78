"""Process and limit helpers shared by the sandbox tests (a uniquely named module: several
test directories have a ``conftest`` and only one of them can be imported by that name)."""

from __future__ import annotations

import os

from spade.sandbox import SandboxLimits

#: Short limits so hostile code is stopped quickly in tests.
FAST_LIMITS = SandboxLimits(call_timeout_s=2.0, load_timeout_s=5.0, memory_mb=1024)
#: Limits of the ``roomy`` sandbox: for tests about what a call does, not how fast (a
#: loaded machine takes seconds for what a quiet one does in milliseconds).
ROOMY = SandboxLimits(call_timeout_s=60.0, load_timeout_s=60.0, memory_mb=1024)


def descendants(root: int) -> set[int]:
    """Live pids below ``root`` (by walking /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read().decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        children.setdefault(int(fields[1]), []).append(int(name))
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` so far (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
