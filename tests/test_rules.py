"""Rule files, schema validation, graph integrity, settings and extra rule folders."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.app.diagnose import run_diagnose
from advisor.app.job import JobOptions
from advisor.app.rulesets import load_graph
from advisor.cli import app
from advisor.core.resources import rules_dir
from advisor.engine.graph import build_graph, integrity_errors
from advisor.engine.rule_model import FeatureRule
from advisor.engine.rules import load_rules, load_settings
from advisor.engine.settings import RuleOptions
from advisor.model import Applicability, DataError, InputError

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "profiles"

SYMPTOM = """\
id: symptom.{name}
kind: symptom
title: A team's own symptom
measure: {measure}
compare: above
fine: 0.1
levels: {{warning: 0.1}}
message: "value {{value}}"
docs: {{why: "Explains why this matters.", example: {{before: a, after: b}}}}
references: [{{source: team wiki, section: tuning}}]
status: experimental
tags: [team]
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(text)
    return path


def test_builtin_rules_are_clean():
    rules = load_rules()
    _, errors = integrity_errors(rules)
    assert errors == []
    kinds = {r.kind for r in rules.rules.values()}
    assert {"symptom", "bottleneck", "feature"} <= kinds
    for bottleneck in (
        "compute",
        "communication",
        "memory",
        "host-dispatch",
        "data-pipeline",
        "slow-rank",
    ):
        assert f"bottleneck.{bottleneck}" in rules


def test_every_rule_is_documented():
    for rule in load_rules().rules.values():
        assert len(rule.docs.why) > 40, rule.id
        assert rule.docs.example.before and rule.docs.example.after, rule.id
        assert rule.references, rule.id


def test_display_only_features_never_carry_ops():
    for rule in load_rules().of_type(FeatureRule):
        change = rule.change
        if change.applicability is Applicability.display_only:
            assert not change.ops and change.advice, rule.id
        else:
            assert change.ops, rule.id


def _order_on(graph, bottleneck: str, platform: str) -> list[str]:
    return [f.id for _, f in graph.features_for(bottleneck) if f.runs_on(platform)]


def test_try_orders_follow_the_guide():
    graph = load_graph()
    # a network that retransmits comes before any change to the job (only when it does)
    assert _order_on(graph, "bottleneck.communication", "ascend")[:4] == [
        "feature.check-rdma-network",
        "feature.fsdp-forward-prefetch",
        "feature.fsdp-backward-prefetch",
        "feature.fused-dispatcher",
    ]
    assert _order_on(graph, "bottleneck.host-dispatch", "ascend")[:3] == [
        "feature.remove-launch-blocking",
        "feature.task-queue-level2",
        "feature.cpu-affinity",
    ]
    # on a GPU the Ascend-only features are not options: graph capture comes first
    assert _order_on(graph, "bottleneck.host-dispatch", "cuda")[0] == "feature.gpu-cuda-graphs"
    assert "feature.gpu-cuda-graphs" not in _order_on(graph, "bottleneck.host-dispatch", "ascend")
    compute = [f.id for _, f in graph.features_for("bottleneck.compute")]
    assert (
        compute.index("feature.flash-attention")
        < compute.index("feature.fused-rmsnorm")
        < compute.index("feature.moe-grouped-gemm")
    )
    memory = [f.id for _, f in graph.features_for("bottleneck.memory")]
    assert (
        memory.index("feature.chunk-loss")
        < memory.index("feature.activation-recompute")
        < memory.index("feature.swap-optimizer")
    )


def test_lint_command_passes_on_builtin_rules():
    result = runner.invoke(app, ["rules", "lint"])
    assert result.exit_code == 0, result.output
    assert "rules OK" in result.output


def test_broken_rule_file_is_fatal_and_names_file_and_path(tmp_path: Path):
    path = write(
        tmp_path,
        "bad",
        SYMPTOM.format(name="bad", measure="step.free_ratio").replace(
            "compare: above", "compare: sideways"
        ),
    )
    with pytest.raises(DataError) as err:
        load_rules([tmp_path])
    assert str(path) in str(err.value)
    assert "$.compare" in str(err.value)


def test_unknown_fact_in_a_rule_is_an_integrity_error(tmp_path: Path):
    write(tmp_path, "made-up", SYMPTOM.format(name="made-up", measure="step.imaginary_ratio"))
    rules = load_rules([tmp_path])
    _, errors = integrity_errors(rules)
    assert any("step.imaginary_ratio" in e and "not in the facts catalogue" in e for e in errors)


def _feature(name: str, after: list[str]) -> str:
    return f"""\
id: feature.{name}
kind: feature
title: Feature {name}
addresses: [{{bottleneck: bottleneck.compute, order: {90 + len(name)}}}]
after: [{", ".join(after)}]
change: {{target: none, applicability: display-only, advice: "do it by hand"}}
effect: {{gain: faster, risk: none}}
verify: [{{fact: step.time_ms, direction: decrease}}]
docs: {{why: "Explains why this matters.", example: {{before: a, after: b}}}}
references: [{{source: team wiki, section: tuning}}]
status: experimental
tags: [team]
"""


def test_cycle_in_after_is_reported_as_a_path(tmp_path: Path):
    write(tmp_path, "aa", _feature("aa", ["feature.bbb"]))
    write(tmp_path, "bbb", _feature("bbb", ["feature.aa"]))
    _, errors = integrity_errors(load_rules([tmp_path]))
    cycles = [e for e in errors if e.startswith("cycle")]
    assert cycles and (
        "feature.aa -> feature.bbb -> feature.aa" in cycles[0]
        or "feature.bbb -> feature.aa -> feature.bbb" in cycles[0]
    )
    result = runner.invoke(app, ["rules", "lint", str(tmp_path)])
    assert result.exit_code == 2


def test_unknown_reference_and_feature_addressing_nothing(tmp_path: Path):
    write(tmp_path, "dangling", _feature("dangling", ["feature.nope"]))
    text = _feature("idle", []).replace(
        "addresses: [{bottleneck: bottleneck.compute, order: 94}]", "addresses: []"
    )
    write(tmp_path, "idle", text)
    _, errors = integrity_errors(load_rules([tmp_path]))
    assert any("unknown rule feature.nope" in e for e in errors)
    assert any("feature.idle addresses no bottleneck and collects no fact" in e for e in errors)
    with pytest.raises(DataError):
        build_graph(load_rules([tmp_path]))


def test_duplicate_ids_are_fatal(tmp_path: Path):
    shutil.copy(rules_dir() / "symptoms" / "slow-rank.yaml", tmp_path / "slow-rank.yaml")
    with pytest.raises(DataError, match=r"duplicate rule id symptom\.slow-rank"):
        load_rules([tmp_path])


def test_extra_rules_dir_fires_on_a_profile(tmp_path: Path):
    team = tmp_path / "team"
    write(team, "idle-anywhere", SYMPTOM.format(name="idle-anywhere", measure="step.free_ratio"))
    result = runner.invoke(
        app,
        ["diagnose", str(EXAMPLES / "host-bound"), "--rules-dir", str(team), "--format", "json"],
    )
    assert result.exit_code == 0, result.output
    assert '"symptom.idle-anywhere"' in result.output


def test_settings_override_params_and_disable_rules(tmp_path: Path):
    settings = tmp_path / ".advisor.yaml"
    settings.write_text(
        "rules:\n"
        "  symptom.exposed-communication-high:\n    params: {fine: 0.25, act: 0.40}\n"
        "  symptom.device-idle-high:\n    enabled: false\n"
    )
    run = run_diagnose(JobOptions(profile=EXAMPLES / "host-bound"), RuleOptions(settings=settings))
    fired = {s.id for s in run.diagnosis.symptoms}
    assert "symptom.device-idle-high" not in fired  # disabled
    assert (
        "symptom.exposed-communication-high" not in fired
    )  # 17.6% is fine under the new threshold
    assert "symptom.host-dispatch-gaps" in fired


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("rules:\n  symptom.nope:\n    enabled: false\n", "unknown rule id symptom.nope"),
        ("rules:\n  symptom.slow-rank:\n    params: {bogus: 1}\n", "has no param 'bogus'"),
        ("rules:\n  symptom.slow-rank:\n    params: {fine: high}\n", "must be a number"),
        ("rules:\n  symptom.slow-rank:\n    colour: red\n", "colour"),
    ],
)
def test_bad_settings_are_errors(tmp_path: Path, text: str, fragment: str):
    settings = tmp_path / ".advisor.yaml"
    settings.write_text(text)
    with pytest.raises(InputError, match=re.escape(fragment)):
        load_rules(settings=load_settings(settings))
    result = runner.invoke(app, ["rules", "list", "--settings", str(settings)])
    assert result.exit_code != 0


def test_rules_list_filters_and_show():
    result = runner.invoke(app, ["rules", "list", "--kind", "bottleneck"])
    assert result.exit_code == 0
    assert result.output.count("bottleneck.") == 8
    tagged = runner.invoke(app, ["rules", "list", "--tag", "host-dispatch"])
    assert "feature.task-queue-level2" in tagged.output and "bottleneck.memory" not in tagged.output
    shown = runner.invoke(app, ["rules", "show", "feature.task-queue-level2"])
    assert shown.exit_code == 0
    for part in (
        "why:",
        "change:",
        "edges:",
        "feature.remove-launch-blocking comes before feature.task-queue-level2",
        "example:",
        "references:",
    ):
        assert part in shown.output


def test_rules_graph_renders_both_formats():
    dot = runner.invoke(app, ["rules", "graph", "--format", "dot"])
    assert dot.exit_code == 0 and dot.output.startswith("digraph advisor {")
    assert (
        '"feature.task-queue-level2" -> "bottleneck.host-dispatch" [label="addresses 2"'
        in dot.output
    )
    mermaid = runner.invoke(app, ["rules", "graph"])
    assert mermaid.output.startswith("flowchart LR")
    assert "symptom_device_idle_high -->|indicates| bottleneck_host_dispatch" in mermaid.output
