"""The serving process's collector (project/heap.py): what lives is frozen out of the
collector's walks, and what died frozen (a closed socket's cycles) is freed once the frozen
heap has grown by a quarter, so a process whose sockets come and go does not keep them."""

from __future__ import annotations

import gc
import weakref

import pytest

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
