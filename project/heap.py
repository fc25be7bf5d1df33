"""The collector's settings for a serving process.

Django, the SDKs and the app make a heap of a few hundred thousand objects that live as long
as the process; each full collection walked all of them: 150-240 ms with the event loop
stopped, at 300 sessions 11% of the CPU. Frozen after start-up they are never walked again.

The first generation is 3,000 objects, four times CPython's: a turn's short-lived objects die
in fewer passes. Not more: the second generation walks what ten first passes left, so a first
generation of 10,000 made it 42-62 ms with the loop stopped in a burst of 300 turns, and the
first status of every turn it fell within waited (9-29 ms at 3,000, the same CPU in all).

What is made later lives long too: an open socket is about 190 objects (Twisted's and
Daphne's protocols, the consumer), so 5,000 quiet sockets are a million, and every full
collection walked them with the loop stopped (566-733 ms), whichever turn it fell within.
So what has lived REFREEZE_SECONDS is frozen as well. Most of a socket's objects are in
cycles (a transport and its protocol), which only a walk frees: once the frozen heap has
grown by a quarter since the last walk (CPython's own rule for its oldest generation, which
the frozen heap now is), it is thawed and walked once, closed sockets freed, then frozen
again (bench/quiet_sockets.py). Counting the frozen objects walks all of them (34 ms at
5,000 sockets, with the event loop stopped), so the keeper adds up what each freeze takes
instead, and counts for certain only when that sum says a walk is due: what died frozen
without a cycle makes the sum run ahead of the count, never behind it."""

from __future__ import annotations

import gc
import threading
import time

FIRST_GENERATION = 3_000
REFREEZE_SECONDS = 10.0
THAW_GROWTH = 1.25

# Whether this process keeps its heap (keep), and what imports froze since the keeper last
# counted (adopt).
_keeping = False
_adopted = 0
_adopting = threading.RLock()


def _freeze_young() -> int:
    """Freezes the objects of the three generations (what was made since the last freeze);
    how many they were."""
    young = sum(len(gc.get_objects(generation)) for generation in range(3))
    gc.freeze()
    return young


def _take_adopted() -> int:
    global _adopted
    with _adopting:
        taken, _adopted = _adopted, 0
    return taken


class Keeper:
    """Freezes what has lived a while, walking the frozen heap when it has grown enough."""

    def __init__(self) -> None:
        with _adopting:  # what was adopted so far is in the count read here
            _take_adopted()
            self.walked = self.frozen = gc.get_freeze_count()

    def refreeze(self) -> bool:
        """Freezes what is not yet; whether the frozen heap was walked first."""
        adopted = _take_adopted()
        self.walked += adopted
        self.frozen += adopted
        due = self.walked * THAW_GROWTH
        if self.frozen >= due:
            self.frozen = gc.get_freeze_count()
        if self.frozen >= due:
            gc.unfreeze()
            gc.collect()
            gc.freeze()
            self.walked = self.frozen = gc.get_freeze_count()
            return True
        self.frozen += _freeze_young()
        return False


def settle() -> None:
    """Call once the application is imported, before it serves."""
    gc.collect()
    gc.freeze()
    _, second, third = gc.get_threshold()
    gc.set_threshold(FIRST_GENERATION, second, third)


def adopt() -> None:
    """What an import just made lives as long as the process (a package's classes and
    functions): frozen as it stands and counted as walked, so that it never makes the keeper
    walk the heap. The model's SDK, imported with a process's first socket, grew the frozen
    heap by more than a quarter, and the walk that followed held the event loop 110 ms in a
    process serving nothing else, half a second in one serving 100 turns. Only in a process
    that keeps its heap."""
    global _adopted
    if not _keeping:
        return
    with _adopting:
        _adopted += _freeze_young()


def keep() -> None:
    """Starts keeping the heap of a process that serves (project.serve), from
    REFREEZE_SECONDS on: the heap `settle` froze is the first one walked."""
    global _keeping
    _keeping = True

    def run() -> None:
        time.sleep(REFREEZE_SECONDS)
        keeper = Keeper()
        while True:
            keeper.refreeze()
            time.sleep(REFREEZE_SECONDS)

    threading.Thread(target=run, name="heap-keeper", daemon=True).start()
