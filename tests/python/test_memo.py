"""The memo tables' eviction rules (python/libsection/_memo.py)."""

import gc

import pytest

from libsection._memo import Lru, WeakMemo, memoized


def test_an_lru_table_keeps_its_bound_and_drops_the_least_recently_used_first():
    table = Lru(3)
    for key in "abc":
        table[key] = key.upper()
    assert table.get("a") == "A"  # used: "b" is now the oldest
    table["d"] = "D"
    assert len(table) == 3
    assert "b" not in table
    assert [k for k in "abcd" if k in table] == ["a", "c", "d"]
    table["c"] = "C2"  # storing counts as use too: "a" is the oldest now
    table["e"] = "E"
    assert [k for k in "acde" if k in table] == ["c", "d", "e"]
    assert table.get("c") == "C2"


def test_an_unbounded_table_keeps_every_entry():
    table = Lru(None)
    for i in range(1000):
        table[i] = i
    assert len(table) == 1000 and table.get(0) == 0


def test_get_or_make_makes_once_and_keeps_nothing_when_making_fails():
    table = Lru(2)
    made = []
    assert table.get_or_make("x", lambda: made.append(1) or "X") == "X"
    assert table.get_or_make("x", lambda: made.append(1) or "Y") == "X"
    assert made == [1]

    def fail():
        raise ValueError("no")

    with pytest.raises(ValueError):
        table.get_or_make("z", fail)
    assert "z" not in table
    assert table.setdefault("x", "other") == "X"
    assert table.pop("x") == "X" and len(table) == 0


def test_a_bound_below_one_is_refused():
    with pytest.raises(ValueError, match="maxsize"):
        Lru(0)


def test_a_weak_table_entry_goes_with_its_key():
    class Key:
        pass

    table = WeakMemo()
    key, kept = Key(), Key()
    table[key] = "value"
    assert table.get_or_make(kept, lambda: "kept") == "kept"
    assert len(table) == 2 and table.get(key) == "value"
    del key
    gc.collect()
    assert len(table) == 1
    assert table.get(kept) == "kept"


def test_a_memoized_function_keeps_its_bound_and_no_exception():
    calls = []

    @memoized(2)
    def square(x):
        calls.append(x)
        if x < 0:
            raise ValueError(x)
        return x * x

    assert [square(2), square(3), square(2)] == [4, 9, 4]
    assert calls == [2, 3]
    square(4)  # drops 3, the least recently used
    square(3)
    assert calls == [2, 3, 4, 3]
    for _ in range(2):
        with pytest.raises(ValueError):
            square(-1)
    assert calls[-2:] == [-1, -1]


def test_once_makes_one_value_for_every_thread_and_keeps_no_failure():
    import threading
    import time

    from libsection._memo import once

    made = []
    started = threading.Barrier(8)

    @once
    def value() -> object:
        time.sleep(0.05)  # long enough for every thread to arrive while it is made
        made.append(object())
        return made[-1]

    def ask(out: list) -> None:
        started.wait()
        out.append(value())

    answers: list = []
    threads = [threading.Thread(target=ask, args=(answers,)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and all(a is made[0] for a in answers)

    tries = []

    @once
    def flaky() -> str:
        tries.append(1)
        if len(tries) == 1:
            raise OSError("not yet")
        return "made"

    with pytest.raises(OSError):
        flaky()
    assert flaky() == "made" and flaky() == "made" and len(tries) == 2
