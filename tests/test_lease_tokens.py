"""Lease tokens (store/items.py): unique within a process by a counter, and between processes by a random
part that a forked child draws anew (a fork copies the parent's counter and random part)."""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading

import pytest

from playlisteval.store.items import _TOKENS


def _child_tokens(queue: multiprocessing.Queue) -> None:
    queue.put([_TOKENS.next() for _ in range(3)])


def test_tokens_of_one_process_never_repeat_across_threads() -> None:
    seen: list[str] = []

    def take() -> None:
        seen.extend(_TOKENS.next() for _ in range(2000))

    threads = [threading.Thread(target=take) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == len(seen) == 8000


@pytest.mark.skipif(sys.platform == "win32" or not hasattr(os, "fork"), reason="fork only")
def test_a_forked_child_does_not_reuse_its_parents_tokens() -> None:
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    mine = [_TOKENS.next() for _ in range(3)]
    child = context.Process(target=_child_tokens, args=(queue,))
    child.start()
    theirs = queue.get(timeout=30)
    child.join(timeout=30)
    assert child.exitcode == 0
    assert not set(mine) & set(theirs) and theirs[0][:12] != mine[0][:12]
