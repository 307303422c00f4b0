"""The package's memo tables, each with one of two eviction rules.

- ``Lru(maxsize)``: strong keys; past ``maxsize`` entries the least recently used one goes
  (found or stored counts as used). A miss only costs the work again, so every table whose
  keys come from the user's data (texts, signatures, node applies) has a bound.
  ``maxsize=None`` never drops an entry: for tables whose entries must stay what they were
  (one class per class, addresses native code holds), whose keys the program defines.
- ``WeakMemo()``: weak keys; an entry lives as long as its key (a node, whose lifetime is
  the value's), so it needs no bound.

``memoized(maxsize)`` keeps a function's results by its arguments under the ``Lru`` rule;
``once`` keeps the one result of a function without arguments for good (what is made once per
process: a class, a JAX primitive, a fact of the installed PyTensor).
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar, cast

__all__ = ["Lru", "WeakMemo", "memoized", "once"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
F = TypeVar("F", bound=Callable[..., object])
T = TypeVar("T")

_MISSING = object()


class Lru(Generic[K, V]):
    """A table of at most ``maxsize`` entries (None: unbounded), least recently used out
    first. Safe to share between threads under the GIL: a racing eviction costs a miss."""

    __slots__ = ("_entries", "maxsize")

    def __init__(self, maxsize: int | None) -> None:
        if maxsize is not None and maxsize < 1:
            raise ValueError(f"Lru: maxsize must be at least 1 or None, not {maxsize!r}")
        self.maxsize = maxsize
        self._entries: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K, default: V | None = None) -> V | None:
        try:
            value = self._entries[key]
            self._entries.move_to_end(key)
        except KeyError:  # absent, or dropped by another thread in between
            return default
        return value

    def __setitem__(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        if self.maxsize is None:
            return
        while len(self._entries) > self.maxsize:
            try:
                self._entries.popitem(last=False)
            except KeyError:  # another thread emptied it
                break

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The entry of ``key``, made by ``make()`` and stored if absent (an exception from
        ``make`` stores nothing)."""
        found = self.get(key, cast(V, _MISSING))
        if found is _MISSING:
            found = make()
            self[key] = found
        return cast(V, found)

    def setdefault(self, key: K, value: V) -> V:
        """The entry of ``key``; ``value``, stored, if absent."""
        return self.get_or_make(key, lambda: value)

    def pop(self, key: K, default: V | None = None) -> V | None:
        return self._entries.pop(key, default)

    def clear(self) -> None:
        self._entries.clear()

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Lru(maxsize={self.maxsize}, {len(self)} entries)"


class WeakMemo(Generic[K, V]):
    """A table whose entries live as long as their keys (which must be weakly referable)."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: weakref.WeakKeyDictionary[K, V] = weakref.WeakKeyDictionary()

    def get(self, key: K, default: V | None = None) -> V | None:
        return self._entries.get(key, default)

    def __setitem__(self, key: K, value: V) -> None:
        self._entries[key] = value

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The entry of ``key``, made by ``make()`` and stored if absent."""
        found = self._entries.get(key, cast(V, _MISSING))
        if found is _MISSING:
            found = self._entries[key] = make()
        return found

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"WeakMemo({len(self)} entries)"


def memoized(maxsize: int) -> Callable[[F], F]:
    """A function's results kept by its (hashable, positional) arguments, at most ``maxsize``,
    least recently used out first; an exception is not kept. functools' LRU: the same rule as
    ``Lru``, in C, for functions called on hot paths."""

    def wrap(function: F) -> F:
        return cast(F, functools.lru_cache(maxsize=maxsize)(function))

    return wrap


def once(function: Callable[[], T]) -> Callable[[], T]:
    """``function()``'s result, made on the first call and kept for the process: one value
    however many threads ask at once (a JAX primitive registered twice would be two). An
    exception is not kept: the next call tries again."""
    lock = threading.Lock()
    made: list[T] = []

    @functools.wraps(function)
    def kept() -> T:
        if not made:
            with lock:
                if not made:
                    made.append(function())
        return made[0]

    return kept
