"""What every frame a socket sends must fit in (tests/chat/test_frames_fit.py)."""

from __future__ import annotations

from activity.presenting.bounded import FRAME_BUDGET, SOCKET_FRAME_LIMIT


def assert_fits(frames: list[str]) -> None:
    sizes = [len(frame.encode("utf-8", "surrogatepass")) for frame in frames]
    assert frames and max(sizes) <= FRAME_BUDGET < SOCKET_FRAME_LIMIT, sizes
