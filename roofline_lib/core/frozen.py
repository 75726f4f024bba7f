"""Frozen dataclasses hashed once: the hash dataclass makes, kept on the object and out of its pickles.

A class takes :func:`hashed_once` as its decorator (above ``@dataclass(frozen=True)``) and calls
:func:`hash_once` at the end of ``__post_init__``.
"""

from __future__ import annotations

from dataclasses import fields

__all__: list[str] = []  # the package's machinery, not part of the course's API


def hash_once(obj) -> int:
    """``obj``'s hash as dataclass makes it (of the fields it hashes), computed on the first call only.

    For a frozen dataclass hashed in a hot loop (a config the serving simulator looks up in its
    caches every step). A string hashes differently in each process, so the kept value never
    travels in a pickle (:func:`pickled_state`) and is computed again when one is loaded.
    """
    cached = obj.__dict__.get("_hash")
    if cached is None:
        cached = hash(tuple(getattr(obj, f.name) for f in fields(obj) if (f.compare if f.hash is None else f.hash)))
        object.__setattr__(obj, "_hash", cached)
    return cached


def pickled_state(obj) -> dict:
    """``obj``'s pickled state: its fields, without the hash :func:`hash_once` kept."""
    return {name: value for name, value in obj.__dict__.items() if name != "_hash"}


def restore_state(obj, state: dict) -> None:
    """Load a pickled ``state`` into ``obj`` and hash it in this process."""
    obj.__dict__.update(state)
    hash_once(obj)


def hashed_once(cls):
    """Class decorator, above ``@dataclass(frozen=True)``: ``cls`` hashes with :func:`hash_once` and
    pickles (and copies) without the kept hash."""
    cls.__hash__ = hash_once
    cls.__getstate__ = pickled_state
    cls.__setstate__ = restore_state
    return cls
