"""The order derivers run in, computed from their declarations.

A deriver that reads a fact runs after the derivers of its scope that write it; a cycle in
those declarations is a programming error that names the derivers on it. Ties keep the order
the registry lists the derivers in, so a profile's missing facts are always listed alike.

networkx computes the order; importing it costs more than reading a small profile, so the
order is kept in the cache of checked data (advisor/inputs/checked_data.py) under a digest of
the declarations themselves: any change to a declaration computes it again.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from typing import Any

from advisor.core.checked_data import cache_dir
from advisor.facts.contract import Deriver

# bump when the cached form changes meaning
ORDER_FORMAT = "1"


class DeclarationError(RuntimeError):
    """The derivers' declarations contradict themselves (a cycle, a name used twice)."""


def derivation_order(derivers: Sequence[Deriver[Any]]) -> list[str]:
    """The names of `derivers` (one scope's), each after the derivers whose facts it reads."""
    names = [d.name for d in derivers]
    if len(set(names)) != len(names):
        raise DeclarationError(f"deriver names used twice: {sorted(names)}")
    key = _digest(derivers)
    cached = _read(key)
    if cached is not None and sorted(cached) == sorted(names):
        return cached
    order = _sort(derivers)
    _write(key, order)
    return order


def dependencies(derivers: Sequence[Deriver[Any]]) -> list[tuple[str, str]]:
    """(writer, reader) pairs: the reader reads a fact the writer writes."""
    return [
        (writer.name, reader.name)
        for reader in derivers
        for writer in derivers
        if writer is not reader and writer.writes_any(reader.reads)
    ]


def _sort(derivers: Sequence[Deriver[Any]]) -> list[str]:
    import networkx as nx  # only when the declarations changed since the order was cached

    graph: nx.DiGraph[str] = nx.DiGraph()
    graph.add_nodes_from(d.name for d in derivers)
    graph.add_edges_from(dependencies(derivers))
    listed = {d.name: i for i, d in enumerate(derivers)}
    try:
        return list(nx.lexicographical_topological_sort(graph, key=listed.__getitem__))
    except nx.NetworkXUnfeasible:
        cycle = " -> ".join(edge[0] for edge in nx.find_cycle(graph))
        raise DeclarationError(f"derivers read each other's facts in a cycle: {cycle}") from None


def _digest(derivers: Sequence[Deriver[Any]]) -> str:
    declared = [
        [d.name, d.scope, sorted(d.inputs), sorted(d.reads), sorted(d.writes)] for d in derivers
    ]
    text = json.dumps([ORDER_FORMAT, declared])
    return hashlib.sha256(text.encode()).hexdigest()


def _read(key: str) -> list[str] | None:
    folder = cache_dir()
    if folder is None:
        return None
    try:
        data = json.loads((folder / "derivers" / f"{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(data, list) and all(isinstance(name, str) for name in data):
        return data
    return None


def _write(key: str, order: list[str]) -> None:
    folder = cache_dir()
    if folder is None:
        return
    entry = folder / "derivers" / f"{key}.json"
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        scratch = entry.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(json.dumps(order), encoding="utf-8")
        os.replace(scratch, entry)
    except OSError:
        return
