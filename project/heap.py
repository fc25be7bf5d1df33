"""The collector's settings for a serving process.

Django, the SDKs and the app make a heap of a few hundred thousand objects that live as long
as the process; each full collection walked all of them: 150-240 ms with the event loop
stopped, at 300 sessions 11% of the CPU. Frozen after start-up they are never walked again,
and a larger first generation collects the short-lived objects of a turn's frames in
fewer, equally short passes."""

from __future__ import annotations

import gc

FIRST_GENERATION = 10_000


def settle() -> None:
    """Call once the application is imported, before it serves."""
    gc.collect()
    gc.freeze()
    _, second, third = gc.get_threshold()
    gc.set_threshold(FIRST_GENERATION, second, third)
