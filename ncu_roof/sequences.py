"""A read-only sequence whose items are made when asked for (rule results from their columns, the
held launches of the placed table as dicts): indexing, slicing and bounds in one place."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import TypeVar, overload

T = TypeVar("T")


class MadeOnDemand(Sequence[T]):
    """Subclasses give ``__len__`` and ``_item(i)`` for ``0 <= i < len``; negative positions count
    from the end and a slice gives a list."""

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def _item(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> list[T]: ...

    def __getitem__(self, i: int | slice) -> T | list[T]:
        if isinstance(i, slice):
            return [self._item(n) for n in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(f"{type(self).__name__} index {i} out of range")
        return self._item(i % len(self))
