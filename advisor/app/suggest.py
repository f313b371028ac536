"""`advisor suggest`: profile + config (+ launch script) -> one validated change, remembered."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from advisor.app.pipeline import add_estimates, collect_facts, load_graph
from advisor.edit.patch import build_patch, unified_diff
from advisor.engine.conditions import Context
from advisor.engine.diagnose import Diagnosis, diagnose
from advisor.engine.graph import RuleGraph
from advisor.engine.planner import (
    Plan,
    config_value,
    evidence_facts,
    is_applied,
    plan,
    verify_lines,
)
from advisor.facts.catalogue import ENV_PREFIX
from advisor.inputs.configs import (
    LaunchScript,
    config_problems,
    effective_config,
    load_config,
    parse_launch,
)
from advisor.inputs.ledger import Ledger, default_path, file_hash
from advisor.model import JOB_SCOPE, FactSet, InputError, PatchOp, Recommendation, Suggestion


@dataclass
class SuggestRun:
    facts: FactSet
    diagnosis: Diagnosis
    suggestion: Suggestion
    ledger: Ledger | None
    notes: list[str]


def _check_world_size(
    facts: FactSet, config: dict[str, object], config_path: Path, launch: LaunchScript | None
) -> None:
    recorded = facts.value("profile.world_size")
    if not isinstance(recorded, int):
        return
    parallel = config.get("parallel")
    fsdp = parallel.get("fsdp_size") if isinstance(parallel, dict) else None
    if isinstance(fsdp, int) and fsdp not in (1, recorded):
        raise InputError(
            str(config_path),
            f"parallel.fsdp_size is {fsdp} but the profile ran with world size {recorded}: "
            "the profile and the config are not the same job",
        )
    if launch is not None and launch.world_size is not None and launch.world_size != recorded:
        raise InputError(
            str(launch.path),
            f"the launch command starts {launch.world_size} processes (nnodes x nproc_per_node) but the "
            f"profile ran with world size {recorded}",
        )


def _context(facts: FactSet, config: dict[str, object], launch: LaunchScript | None) -> Context:
    values = {f.id: f.value for f in facts.facts if f.scope == JOB_SCOPE}
    recorded = {k[len(ENV_PREFIX) :]: str(v) for k, v in values.items() if k.startswith(ENV_PREFIX)}
    env: dict[str, str] | None = {**recorded, **(launch.env if launch else {})}
    if not recorded and launch is None:
        env = None
    return Context(facts=values, config=config, env=env)


def _mark_applied(ledger: Ledger, graph: RuleGraph, ctx: Context) -> list[str]:
    notes: list[str] = []
    last = ledger.last_proposed()
    if (
        last is None
        or ledger.status(last["feature"]) != "proposed"
        or last["feature"] not in graph.ruleset
    ):
        return notes
    rule = graph.ruleset[last["feature"]]
    if is_applied(rule, ctx):
        ledger.append("applied", rule.id, bottleneck=last.get("bottleneck"))
        notes.append(f"the previous suggestion ({rule.id}) is now applied; moving on")
    return notes


def _recommendation(
    run_plan: Plan,
    graph: RuleGraph,
    facts: FactSet,
    diagnosis: Diagnosis,
    config_path: Path,
    launch: LaunchScript | None,
) -> Recommendation | None:
    choice = run_plan.choice
    if choice is None:
        return None
    rule = choice.rule
    change = rule.data["change"]
    patch = None
    if change["target"] != "none" and choice.ops:
        patch = build_patch(
            rule.id, change["target"], change["applicability"], choice.ops, config_path, launch
        )
    bottleneck = next((b for b in diagnosis.bottlenecks if b.id == choice.bottleneck), None)
    why = bottleneck.message if bottleneck else run_plan.summary
    if choice.needs_data:
        why = f"{run_plan.summary}. {why}"
    effect = rule.data["effect"]
    expected = effect["gain"] + (f"; memory: {effect['memory']}" if effect.get("memory") else "")
    return Recommendation(
        feature=rule.id,
        bottleneck=choice.bottleneck,
        title=rule.title,
        why=why,
        evidence=tuple(evidence_facts(facts, diagnosis, choice.bottleneck)),
        patch=patch,
        advice=str(change.get("advice", "")).strip(),
        expected=expected,
        risk=str(effect["risk"]),
        verify=tuple(verify_lines(rule, facts)),
        diff=unified_diff(patch.changes) if patch else "",
    )


def _undo(
    ledger: Ledger, graph: RuleGraph, ctx: Context, config_path: Path, launch: LaunchScript | None
) -> Suggestion | None:
    """After a 'revert' verdict, the next change is undoing the reverted change (if still in place)."""
    reverted = [e for e in ledger.entries if e["event"] == "reverted"]
    if not reverted:
        return None
    feature = str(reverted[-1]["feature"])
    if ledger.status(feature) != "reverted" or feature not in graph.ruleset:
        return None
    proposal = next(
        (
            e
            for e in reversed(ledger.entries)
            if e["event"] == "proposed" and e["feature"] == feature
        ),
        None,
    )
    patch_json = proposal.get("patch") if proposal else None
    if not isinstance(patch_json, dict):
        return None
    rule = graph.ruleset[feature]
    ops = []
    for op in patch_json.get("ops", []):
        before = op.get("before")
        if op.get("op") == "set":
            current = (
                (ctx.env or {}).get(op["path"])
                if patch_json.get("target") == "env"
                else config_value(ctx, op["path"])
            )
            if str(current) != str(op.get("value")):
                continue  # already undone
            ops.append(
                PatchOp("remove", op["path"], None, current)
                if before is None
                else PatchOp("set", op["path"], before, current)
            )
        elif before is not None:
            ops.append(PatchOp("set", op["path"], before, None))
    if not ops:
        return None
    target = "env" if patch_json.get("target") == "env" else "config"
    patch = build_patch(feature, target, "safe", tuple(ops), config_path, launch)
    why = f"compare said revert: {reverted[-1].get('note', 'the change did not help')}"
    rec = Recommendation(
        feature=feature,
        bottleneck=str(reverted[-1].get("bottleneck") or ""),
        title=f"Undo: {rule.title}",
        why=why,
        evidence=(),
        patch=patch,
        advice="",
        expected="back to the baseline's behaviour",
        risk="none: restores the measured baseline",
        verify=("step time back to the baseline's",),
        diff=unified_diff(patch.changes),
    )
    summary = f"undo {feature}; it will not be proposed again"
    return Suggestion("change", rec, (), summary)


def run_suggest(
    profile: Path,
    config_path: Path,
    launch_path: Path | None = None,
    settings_path: Path | None = None,
    rules_dirs: list[Path] | None = None,
    ledger_path: Path | None = None,
    use_ledger: bool = True,
    skip_bad_files: bool = False,
    logs: list[Path] | None = None,
    model_config: Path | None = None,
) -> SuggestRun:
    graph = load_graph(settings_path, rules_dirs)
    launch = parse_launch(launch_path) if launch_path else None
    raw = load_config(config_path)
    problems = config_problems(raw)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InputError(
            str(config_path),
            f"fails the FSDP2 config schema: {problems[0]}{more}; fix it first "
            f"(advisor check {config_path} lists every problem, --fix moves misplaced keys)",
        )
    config = effective_config(raw, launch)
    cli_problems = config_problems(config)
    if cli_problems and launch is not None:
        raise InputError(str(launch.path), f"a command-line override is invalid: {cli_problems[0]}")
    facts = collect_facts(profile, logs, skip_bad_files=skip_bad_files)
    if model_config is not None:
        add_estimates(facts, model_config, config)
    _check_world_size(facts, config, config_path, launch)
    ctx = _context(facts, config, launch)
    ledger = Ledger.load(ledger_path or default_path(config_path)) if use_ledger else None
    notes = _mark_applied(ledger, graph, ctx) if ledger else []
    diagnosis = diagnose(graph, ctx)
    undo = _undo(ledger, graph, ctx, config_path, launch) if ledger else None
    if undo is not None:
        return SuggestRun(facts, diagnosis, undo, ledger, notes)
    run_plan = plan(graph, diagnosis, ctx, ledger.rejected() if ledger else set())
    recommendation = _recommendation(run_plan, graph, facts, diagnosis, config_path, launch)
    suggestion = Suggestion(run_plan.status, recommendation, run_plan.rejected, run_plan.summary)
    if (
        recommendation
        and recommendation.patch
        and recommendation.patch.target == "env"
        and ctx.env is None
    ):
        notes.append(
            "the launch environment is unknown (the profile recorded none and no --launch was given): "
            "check whether the variable is already set"
        )
    if ledger is not None and recommendation is not None:
        last = ledger.last_proposed()
        config_hash = file_hash(config_path)
        repeat = (
            last is not None
            and last["feature"] == recommendation.feature
            and last.get("config_sha256") == config_hash
        )
        if not repeat:
            ledger.append(
                "proposed",
                recommendation.feature,
                bottleneck=recommendation.bottleneck,
                status=run_plan.status,
                patch=recommendation.patch.to_json() if recommendation.patch else None,
                facts={f.id: f.value for f in recommendation.evidence},
                config=str(config_path),
                config_sha256=config_hash,
                config_values=config,
                profile=str(profile),
            )
    return SuggestRun(facts, diagnosis, suggestion, ledger, notes)
