"""The rules a command runs: the checked graph, or only the policies (`check` needs no graph,
so it never imports networkx: it is the command pre-commit runs on every commit)."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from advisor.engine.rules import RuleSet, load_rules
from advisor.engine.settings import RuleOptions, load_settings

if TYPE_CHECKING:
    from advisor.engine.graph import RuleGraph


def load_graph(options: RuleOptions | None = None) -> RuleGraph:
    """Rules (built in + extra folders) with settings applied, as a checked graph."""
    from advisor.engine.graph import build_graph

    options = options or RuleOptions()
    if not options.rules_dirs and not options.settings:
        return _builtin_graph()
    settings = load_settings(options.settings) if options.settings else None
    return build_graph(load_rules(options.rules_dirs, settings))


def load_policies(options: RuleOptions | None = None) -> RuleSet:
    """Only the policy rules (what `check` runs), without the graph of the other kinds."""
    options = options or RuleOptions()
    if not options.rules_dirs and not options.settings:
        return _builtin_policies()
    settings = load_settings(options.settings) if options.settings else None
    return load_rules(options.rules_dirs, settings, kinds=("policy",))


# The built-in rules are package data: read and checked once per process (a long-running
# caller, such as the test suite or a watcher, asks for them many times). Rule sets and graphs
# are never changed after they are built.
@cache
def _builtin_policies() -> RuleSet:
    return load_rules((), None, kinds=("policy",))


@cache
def _builtin_graph() -> RuleGraph:
    from advisor.engine.graph import build_graph

    return build_graph(load_rules((), None))
