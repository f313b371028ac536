"""The rules sub-commands: list, show, lint, graph."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from advisor.cli.options import (
    EXIT_INPUT_ERROR,
    GraphFormat,
    RulesDirOpt,
    SettingsOpt,
    rule_options,
)


def rules_list(
    kind: Annotated[
        str | None, typer.Option("--kind", help="symptom, bottleneck, feature or policy.")
    ] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="Only rules with this tag.")] = None,
    settings: SettingsOpt = None,
    rules_dir: RulesDirOpt = None,
) -> None:
    """One line per rule.

    \b
    Example:
      advisor rules list --kind policy
    """
    from advisor.app.rulesets import load_graph
    from advisor.engine.rules import KINDS
    from advisor.model import DataError
    from advisor.render.rules import rules_list_text

    if kind is not None and kind not in KINDS:
        raise DataError(f"--kind: '{kind}' is not one of {', '.join(KINDS)}")
    graph = load_graph(rule_options(settings, rules_dir))
    rules = sorted(graph.ruleset.rules.values(), key=lambda r: (KINDS.index(r.kind), r.id))
    rules = [
        r for r in rules if (kind is None or r.kind == kind) and (tag is None or tag in r.tags)
    ]
    typer.echo(rules_list_text(rules), nl=False)


def rules_show(
    rule_id: Annotated[str, typer.Argument(help="A rule id, e.g. feature.task-queue-level2.")],
    settings: SettingsOpt = None,
    rules_dir: RulesDirOpt = None,
) -> None:
    """A rule's documentation, params, edges and example.

    \b
    Example:
      advisor rules show feature.task-queue-level2
    """
    from advisor.app.rulesets import load_graph
    from advisor.model import DataError
    from advisor.render.rules import rule_show_text

    graph = load_graph(rule_options(settings, rules_dir))
    if rule_id not in graph.ruleset:
        close = [r for r in graph.ruleset.rules if rule_id.split(".")[-1] in r]
        hint = f" (did you mean {', '.join(sorted(close)[:3])}?)" if close else ""
        raise DataError(f"no rule {rule_id}{hint}")
    typer.echo(rule_show_text(graph.ruleset[rule_id], graph), nl=False)


def rules_lint(
    extra: Annotated[
        list[Path] | None,
        typer.Argument(help="Extra rule folders to check with the built-in rules."),
    ] = None,
) -> None:
    """Validate every rule file and the graph's integrity; exit 2 on any error.

    \b
    Example:
      advisor rules lint my-rules/
    """
    from advisor.engine.graph import integrity_errors
    from advisor.engine.rules import KINDS, load_rules

    ruleset = load_rules(extra or [])
    _, errors = integrity_errors(ruleset)
    if errors:
        for error in errors:
            typer.echo(f"advisor: error: {error}", err=True)
        raise typer.Exit(EXIT_INPUT_ERROR)
    counts = {k: len(ruleset.of_kind(k, enabled_only=False)) for k in KINDS}
    plural = {
        "symptom": "symptoms",
        "bottleneck": "bottlenecks",
        "feature": "features",
        "policy": "policies",
    }
    summary = ", ".join(f"{n} {plural[k] if n != 1 else k}" for k, n in counts.items())
    typer.echo(f"{len(ruleset.rules)} rules OK ({summary})")


def rules_graph(
    output_format: Annotated[
        GraphFormat,
        typer.Option("--format", "-f", help="Mermaid (renders on GitHub) or Graphviz dot."),
    ] = GraphFormat.mermaid,
    settings: SettingsOpt = None,
    rules_dir: RulesDirOpt = None,
) -> None:
    """The whole rule graph as Graphviz dot or Mermaid, for docs and review.

    \b
    Example:
      advisor rules graph --format dot > rules.dot
    """
    from advisor.app.rulesets import load_graph
    from advisor.render.graph import FORMATS

    graph = load_graph(rule_options(settings, rules_dir))
    typer.echo(FORMATS[output_format.value](graph), nl=False)
