"""A named registry: how advantage estimators and losses are selected by a config string."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

F = TypeVar("F", bound=Callable)


class Registry(Generic[F]):
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, F] = {}
        self._traits: dict[str, dict[str, object]] = {}

    def register(self, name: str, **traits: object) -> Callable[[F], F]:
        """`@REGISTRY.register("opd", reads_policy=True)`: the traits say what the entry needs."""

        def add(fn: F) -> F:
            if name in self._items:
                raise KeyError(f"{self.kind} {name!r} is already registered")
            self._items[name] = fn
            self._traits[name] = traits
            return fn

        return add

    def trait(self, name: str, key: str, default: object = None) -> object:
        self.get(name)
        return self._traits[name].get(key, default)

    def get(self, name: str) -> F:
        if name not in self._items:
            raise KeyError(f"unknown {self.kind} {name!r}; registered: {', '.join(sorted(self._items))}")
        return self._items[name]

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: str) -> bool:
        return name in self._items
