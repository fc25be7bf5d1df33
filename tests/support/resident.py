"""How much this process's resident memory grew at its peak while something ran, read from
/proc (Linux): the peak is reset first, so a buffer freed again before the end still counts."""

from __future__ import annotations

import re
from pathlib import Path
from types import TracebackType

STATUS = Path("/proc/self/status")


def kilobytes(field: str, status: Path = STATUS) -> int:
    """A size from a process's status file (this process's by default)."""
    found = re.search(rf"^{field}:\s+(\d+) kB", status.read_text(), re.MULTILINE)
    assert found, f"{status} has no {field}"
    return int(found.group(1))


class PeakGrowth:
    """`with PeakGrowth() as growth:` … `growth.megabytes`: the peak resident size during
    the block, less the resident size at its start."""

    def __init__(self) -> None:
        self.start = 0
        self.peak = 0

    @property
    def megabytes(self) -> float:
        return (self.peak - self.start) / 1024

    def __enter__(self) -> PeakGrowth:
        # "5" resets the peak (VmHWM) to the present size (proc(5), clear_refs).
        Path("/proc/self/clear_refs").write_text("5")
        self.start = kilobytes("VmRSS")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.peak = kilobytes("VmHWM")
