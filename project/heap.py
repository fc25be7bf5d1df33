"""The collector's settings for a serving process.

Django, the SDKs and the app make a heap of a few hundred thousand objects that live as long
as the process; each full collection walked all of them: 150-240 ms with the event loop
stopped, at 300 sessions 11% of the CPU. Frozen after start-up they are never walked again,
and a larger first generation collects the short-lived objects of a turn's frames in
fewer, equally short passes.

What is made later lives long too: an open socket is about 190 objects (Twisted's and
Daphne's protocols, the consumer), so 5,000 quiet sockets are a million, and every full
collection walked them with the loop stopped (566-733 ms), whichever turn it fell within.
So what has lived REFREEZE_SECONDS is frozen as well. Most of a socket's objects are in
cycles (a transport and its protocol), which only a walk frees: once the frozen heap has
grown by a quarter since the last walk (CPython's own rule for its oldest generation, which
the frozen heap now is), it is thawed and walked once, closed sockets freed, then frozen
again (bench/quiet_sockets.py). The heap's size is read as the allocator's count of blocks in
use, in constant time: counting the frozen objects walks all of them (34 ms at 5,000 sockets,
with the event loop stopped, every 10 s)."""

from __future__ import annotations

import gc
import sys
import threading
import time

FIRST_GENERATION = 10_000
REFREEZE_SECONDS = 10.0
THAW_GROWTH = 1.25


class Keeper:
    """Freezes what has lived a while, walking the frozen heap when the heap has grown
    enough."""

    def __init__(self) -> None:
        self.walked = sys.getallocatedblocks()

    def refreeze(self) -> bool:
        """Freezes what is not yet; whether the frozen heap was walked first."""
        if sys.getallocatedblocks() >= self.walked * THAW_GROWTH:
            gc.unfreeze()
            gc.collect()
            gc.freeze()
            self.walked = sys.getallocatedblocks()
            return True
        gc.freeze()
        return False


def settle() -> None:
    """Call once the application is imported, before it serves."""
    gc.collect()
    gc.freeze()
    _, second, third = gc.get_threshold()
    gc.set_threshold(FIRST_GENERATION, second, third)


def keep() -> None:
    """Starts keeping the heap of a process that serves (project.serve), from
    REFREEZE_SECONDS on: the heap `settle` froze is the first one walked."""

    def run() -> None:
        time.sleep(REFREEZE_SECONDS)
        keeper = Keeper()
        while True:
            keeper.refreeze()
            time.sleep(REFREEZE_SECONDS)

    threading.Thread(target=run, name="heap-keeper", daemon=True).start()
