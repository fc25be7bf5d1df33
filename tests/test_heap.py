"""The serving process's collector (project/heap.py): what lives is frozen out of the
collector's walks, and what died frozen (a closed socket's cycles) is freed once the frozen
heap has grown by a quarter, so a process whose sockets come and go does not keep them; what
an import made (the model's SDK, with the first socket) is frozen without a walk."""

from __future__ import annotations

import gc
import weakref

import pytest

from project import heap
from project.heap import THAW_GROWTH, Keeper


class Node:
    """A socket's protocol and transport in small: two objects that point at each other."""

    def __init__(self) -> None:
        self.other = Node.__new__(Node)
        self.other.other = self


@pytest.fixture
def frozen_heap():
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()
    gc.collect()


def test_what_lives_a_while_is_frozen_out_of_the_walks(frozen_heap):
    keeper = Keeper()
    living = [Node() for _ in range(1000)]

    assert keeper.refreeze() is False
    assert gc.get_freeze_count() >= keeper.walked + 2 * len(living)
    assert gc.get_count()[0] < 100  # nothing of theirs left for the next pass to walk


def test_a_dead_cycle_kept_by_a_freeze_is_freed_once_the_frozen_heap_grows_a_quarter(
    frozen_heap,
):
    keeper = Keeper()
    closed = Node()
    gone = weakref.ref(closed)
    keeper.refreeze()
    del closed
    gc.collect()
    assert gone() is not None  # frozen: no walk reaches it

    # New sockets, alive, until the frozen heap has grown by a quarter.
    opened: list[Node] = []
    while gc.get_freeze_count() < keeper.walked * THAW_GROWTH:
        opened.extend(Node() for _ in range(1000))
        assert keeper.refreeze() is False
    assert keeper.refreeze() is True

    assert gone() is None
    assert all(node.other.other is node for node in opened)


def test_what_an_import_made_is_frozen_and_never_makes_the_keeper_walk(frozen_heap, monkeypatch):
    monkeypatch.setattr(heap, "_keeping", True)  # as project.serve sets it
    keeper = Keeper()
    # An import's classes and functions: more than a quarter of the heap, alive for good.
    imported = [Node() for _ in range(int(keeper.walked * (THAW_GROWTH - 1)) + 1000)]

    heap.adopt()
    assert gc.get_count()[0] < 100  # frozen at once: no pass walks them
    assert keeper.refreeze() is False
    assert keeper.refreeze() is False  # not the growth that calls for a walk
    # Counted as walked: sockets that grow the heap by less than a quarter of what it now
    # is (import included) call for no walk either.
    before = keeper.walked
    assert before >= gc.get_freeze_count() - 1000
    opened = [Node() for _ in range(int(before * (THAW_GROWTH - 1) / 2) - 1000)]
    assert keeper.refreeze() is False
    assert keeper.refreeze() is False
    assert all(node.other.other is node for node in imported + opened)


def test_adopting_does_nothing_in_a_process_that_does_not_keep_its_heap(frozen_heap):
    frozen = gc.get_freeze_count()
    young = [Node() for _ in range(1000)]
    heap.adopt()
    assert gc.get_freeze_count() < frozen + len(young)
