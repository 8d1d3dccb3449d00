"""One registry type for every table of named things an area offers: job kinds, study rules and
schedules, judges and their backends, the video agent's roles, HOI-Edit's model roles, and so on.

A :class:`Registry` maps a name to an entry and keeps a one-line description of each; it reads as a
mapping (``name in registry``, ``registry[name]``, ``sorted(registry)``), refuses a second entry
under a taken name unless told to replace it, and names the choices when asked for an unknown one.
Each registry is created once, in its area's module, with the area and what it holds; all of them
are listed by :func:`every_registry` once the areas are imported
(:func:`engines.platform.discovery.discover_all`), which is how ``python -m engines.platform
registries`` writes the table of docs/extending.md.
"""

from __future__ import annotations

import importlib
import threading
import weakref
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownName(KeyError):
    """A name no entry of a registry has; the message names the registry and its choices."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Described(Generic[T]):
    entry: T
    description: str


class Registry(MutableMapping[str, T]):
    """Name -> entry, each with a one-line description (see the module docstring). Entries are
    added with :meth:`add` or :meth:`register`; item assignment and deletion exist so that a test
    can put an entry in for its own duration (``monkeypatch.setitem``)."""

    def __init__(self, area: str, holds: str, *, filled_by: str | None = None) -> None:
        """``filled_by``: the module whose import registers the entries, imported when the registry is
        first read, so that discovering an area does not import its implementations (often torch)."""
        self.area, self.holds = area, holds
        self._entries: dict[str, Described[T]] = {}
        self._lock = threading.RLock()
        self._filled_by = filled_by
        with _ALL_LOCK:
            _ALL.add(self)

    # A registry is one table, not its contents: compared and hashed by identity (kept in a WeakSet).
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def _fill(self) -> None:
        # Import once, under the registry's lock: another thread waits for the whole table; a read during
        # the import in this thread (the module registering its entries) sees what is there so far. An
        # import that fails is tried again at the next read, and its error is the reader's.
        if self._filled_by is None:
            return
        with self._lock:
            module, self._filled_by = self._filled_by, None
            if module is None:
                return
            try:
                importlib.import_module(module)
            except BaseException:
                self._filled_by = module
                raise

    # -- the mapping
    def __getitem__(self, name: str) -> T:
        self._fill()
        try:
            return self._entries[name].entry
        except KeyError:
            choices = ", ".join(sorted(self._entries)) or "none registered"
            raise UnknownName(f"unknown {self.holds.rstrip('s')} {name!r}; choose one of: {choices}") from None

    def __iter__(self) -> Iterator[str]:
        self._fill()
        return iter(list(self._entries))

    def __len__(self) -> int:
        self._fill()
        return len(self._entries)

    def __setitem__(self, name: str, entry: T) -> None:
        self.add(name, entry, replace=True)

    def __delitem__(self, name: str) -> None:
        with self._lock:
            del self._entries[name]

    # -- adding and removing
    def add(self, name: str, entry: T, description: str = "", *, replace: bool = False) -> T:
        """Register ``entry`` under ``name``; a taken name is refused unless ``replace``."""
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"a {self.holds.rstrip('s')} needs a name (got {name!r})")
        with self._lock:
            existing = self._entries.get(name)
            if existing is not None and existing.entry is not entry and not replace:
                raise ValueError(f"a {self.holds.rstrip('s')} named {name!r} is already registered")
            self._entries[name] = Described(entry, " ".join(description.split()))
        return entry

    def register(self, name: str, description: str = "", *, replace: bool = False) -> Callable[[T], T]:
        """The decorator form of :meth:`add`; the description defaults to the first line of the
        entry's docstring."""
        def decorate(entry: T) -> T:
            doc = (getattr(entry, "__doc__", None) or "").strip().splitlines()
            return self.add(name, entry, description or (doc[0] if doc else ""), replace=replace)
        return decorate

    def remove(self, name: str) -> None:
        """Forget ``name`` (a test's or a benchmark's entry); nothing happens when it is not there."""
        with self._lock:
            self._entries.pop(name, None)

    def description(self, name: str) -> str:
        self[name]  # noqa: B018 - an unknown name raises UnknownName with the choices
        return self._entries[name].description

    def described(self) -> list[tuple[str, str]]:
        """(name, description) of every entry, sorted by name."""
        self._fill()
        return [(name, self._entries[name].description) for name in sorted(self._entries)]


_ALL: weakref.WeakSet[Registry] = weakref.WeakSet()  # a test's own registry goes when the test ends
_ALL_LOCK = threading.Lock()


def every_registry() -> list[Registry]:
    """Every registry created so far, by area and contents (every area's once
    :func:`engines.platform.discovery.discover_all` has imported them; this module does not import
    it, as discovery imports the modules that hold registries)."""
    with _ALL_LOCK:
        return sorted(list(_ALL), key=lambda registry: (registry.area, registry.holds))


def markdown_table() -> str:
    """The table of docs/extending.md: each registry, where it lives, and its entries (call
    ``discover_all()`` first for every area's)."""
    lines = ["| area | registry | entries |", "|---|---|---|"]
    for registry in every_registry():
        names = ", ".join(f"`{name}`" for name in sorted(registry)) or "(none)"
        lines.append(f"| {registry.area} | {registry.holds} | {names} |")
    return "\n".join(lines)
