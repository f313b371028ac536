"""Every suggestion predicts its effect; every measurement calibrates the next prediction:
suggest's `predicted`, compare --ledger's `measured`, the ledger's calibration, and a later
prediction of the same feature taken from the job's own measurements."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from advisor.app.rulesets import load_graph
from advisor.core.validation import schema_errors
from advisor.engine.compare_work import Unit
from advisor.engine.predict import calibrate, measure, predict, prediction_json, priors
from advisor.engine.rule_model import Efficacy
from advisor.inputs.ledger import Ledger
from advisor.model import Bottleneck, Reach, Recommendation
from tests.cli_run import run_cli

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ROOT / "examples" / "profiles"
GRAPH = load_graph()


@pytest.fixture
def job(tmp_path: Path) -> Path:
    for name in ("config.yaml", "run.sh", "env.sh"):
        shutil.copy(ROOT / "examples" / "fsdp2" / name, tmp_path / name)
    return tmp_path


def _suggest_json(job: Path, profile: str, *extra: str) -> dict:
    ran = run_cli(
        "suggest",
        str(PROFILES / profile),
        str(job / "config.yaml"),
        "--launch",
        str(job / "run.sh"),
        "--format",
        "json",
        *extra,
    )
    assert ran.exit_code == 0, ran.output
    return json.loads(ran.stdout)


def test_suggest_json_carries_a_numeric_prediction_within_the_ceiling(job: Path):
    payload = _suggest_json(job, "comm-bound", "--no-ledger")
    assert payload["schema"] == "advisor/suggestion@4"
    assert schema_errors(payload, "suggestion.schema.json") == []
    rec = payload["recommendation"]
    predicted = rec["predicted"]
    change = predicted["change"]
    assert isinstance(change["expected"], float)
    assert change["low"] <= change["expected"] <= change["high"] < 0
    # never more than the mechanism can reach
    assert rec["ceiling"]["bound"] == "at-most"
    assert -change["low"] * predicted["step_ms"] <= rec["ceiling"]["ms"] + 1e-3
    assert predicted["derivation"]["bound_ms"] == pytest.approx(rec["ceiling"]["ms"], abs=1e-3)
    assert predicted["derivation"]["efficacy"]["from"] == "default-prior"


def test_compare_records_the_measurement_and_the_ledger_shows_the_calibration(job: Path):
    ledger = job / "ledger.jsonl"
    _suggest_json(job, "comm-bound", "--ledger", str(ledger))
    proposed = json.loads(ledger.read_text().splitlines()[-1])
    assert proposed["schema"] == "advisor/ledger@2"
    assert proposed["predicted"]["change"]["expected"] < 0

    ran = run_cli(
        "compare", str(PROFILES / "comm-bound"), str(PROFILES / "healthy"), "--ledger", str(ledger)
    )
    assert ran.exit_code == 0, ran.output
    assert "prediction: feature.fsdp-forward-prefetch: predicted" in ran.stdout
    verdict = json.loads(ledger.read_text().splitlines()[-1])
    assert verdict["event"] == "kept"
    assert verdict["measured"]["change"] == pytest.approx(-0.28, abs=0.01)
    assert verdict["measured"]["error"] == pytest.approx(
        verdict["measured"]["change"] - verdict["predicted"]["change"]["expected"], abs=1e-3
    )
    for line in ledger.read_text().splitlines():
        assert schema_errors(json.loads(line), "ledger.schema.json") == []

    shown = run_cli("ledger", "--ledger", str(ledger), "--format", "json")
    assert shown.exit_code == 0, shown.output
    history = json.loads(shown.stdout)
    assert schema_errors(history, "ledger_history.schema.json") == []
    change = history["changes"][0]
    assert change["verdict"] == "kept"
    assert change["measured"]["change"] == verdict["measured"]["change"]
    overall = history["calibration"]["overall"]
    assert overall["measurements"] == 1
    assert overall["mean_error"] == pytest.approx(verdict["measured"]["error"], abs=1e-4)
    feature = history["calibration"]["features"]["feature.fsdp-forward-prefetch"]
    assert feature["in_range_share"] == (1.0 if verdict["measured"]["in_range"] else 0.0)

    text = run_cli("ledger", "--ledger", str(ledger)).stdout
    assert "Predicted vs measured:" in text
    assert "Calibration" in text


def test_the_pr_comment_shows_predicted_against_measured(job: Path):
    ledger = job / "ledger.jsonl"
    _suggest_json(job, "comm-bound", "--ledger", str(ledger))
    ran = run_cli(
        "compare",
        str(PROFILES / "comm-bound"),
        str(PROFILES / "healthy"),
        "--ledger",
        str(ledger),
        "--format",
        "markdown",
    )
    assert "**Predicted vs measured**" in ran.stdout
    assert "| time per token" in ran.stdout and "inside the predicted range" in ran.stdout


def _recommendation(reach_ms: float, target_ms: float) -> Recommendation:
    return Recommendation(
        feature="feature.fsdp-forward-prefetch",
        bottleneck="bottleneck.communication",
        title="",
        cause=None,
        evidence=(),
        patch=None,
        advice="",
        expected="",
        risk="",
        verify=(),
        reach=Reach(reach_ms, reach_ms / 100.0, target_ms, "overlap"),
    )


def test_a_later_prediction_uses_the_jobs_own_measurements():
    rule = GRAPH.ruleset.feature("feature.fsdp-forward-prefetch")
    rec = _recommendation(10.0, 10.0)
    prior = predict(rec, rule, 100.0, tokens_known=False)
    assert prior is not None and prior.efficacy_from == "default-prior"
    assert prior.low == pytest.approx(-0.10 * priors().default[1])
    # two measurements that realised 40% and 50% of a 10 ms bound on a 100 ms step
    entries = [
        {"event": "kept", "feature": rule.id if rule else "", "measured": m.to_json()}
        for m in (
            measure(prediction_json(prior), Unit.step, -0.04),
            measure(prediction_json(prior), Unit.step, -0.05),
        )
    ]
    per_feature, overall = calibrate(entries)
    assert overall is not None and overall.measurements == 2
    later = predict(rec, rule, 100.0, tokens_known=False, calibration=per_feature[rec.feature])
    assert later is not None
    assert later.efficacy_from == "job-calibration" and later.measurements == 2
    assert later.expected == pytest.approx(-0.045)
    assert later.low <= -0.05 and later.high >= -0.04


def test_a_change_of_the_work_judged_on_step_time_is_not_scored():
    rule = GRAPH.ruleset.feature("feature.gradient-accumulation")
    predicted = predict(_recommendation(48.0, 96.0), rule, 152.0, tokens_known=False)
    assert predicted is not None and predicted.metric == "time_per_sample"
    measured = measure(prediction_json(predicted), Unit.step, 0.35)  # the step grew with its work
    assert measured.comparable is False and measured.error is None
    per_sample = measure(prediction_json(predicted), Unit.sample, -0.2)
    assert per_sample.comparable is True and per_sample.error is not None


def test_an_old_ledger_without_predictions_stays_readable(tmp_path: Path):
    ledger = tmp_path / "ledger.jsonl"
    old = [
        {"schema": "advisor/ledger@1", "time": "t1", "event": "proposed", "feature": "feature.x"},
        {"schema": "advisor/ledger@1", "time": "t2", "event": "kept", "feature": "feature.x"},
    ]
    ledger.write_text("".join(json.dumps(e) + "\n" for e in old))
    assert calibrate(Ledger.load(ledger).entries) == ({}, None)
    ran = run_cli("ledger", "--ledger", str(ledger), "--format", "json")
    assert ran.exit_code == 0, ran.output
    history = json.loads(ran.stdout)
    assert schema_errors(history, "ledger_history.schema.json") == []
    assert history["changes"] == [
        {
            "feature": "feature.x",
            "proposed": "t1",
            "predicted": None,
            "verdict": "kept",
            "measured": None,
        }
    ]
    assert history["calibration"]["overall"] is None


def test_the_ledger_schemas_share_the_prediction_and_measurement_definitions():
    schemas = ROOT / "schemas"
    suggestion = json.loads((schemas / "suggestion.schema.json").read_text())["$defs"]
    comparison = json.loads((schemas / "comparison.schema.json").read_text())["$defs"]
    for name in ("ledger.schema.json", "ledger_history.schema.json"):
        defs = json.loads((schemas / name).read_text())["$defs"]
        assert defs["prediction"] == suggestion["prediction"], name
        assert defs["change_range"] == suggestion["change_range"], name
        assert defs["measured"] == comparison["measured"], name


def test_a_ledger_with_malformed_predictions_is_still_shown(tmp_path: Path):
    ledger = tmp_path / "ledger.jsonl"
    lines = [
        {"event": "proposed", "feature": "feature.x", "predicted": "fast"},
        {"event": "kept", "feature": "feature.x", "measured": {"comparable": True, "change": "?"}},
        {"event": "proposed", "feature": "feature.y", "predicted": {"change": {"expected": True}}},
        {"event": "reverted", "feature": "feature.y", "measured": [1, 2]},
    ]
    ledger.write_text("".join(json.dumps(e) + "\n" for e in lines))
    for fmt in ("text", "json"):
        ran = run_cli("ledger", "--ledger", str(ledger), "--format", fmt)
        assert ran.exit_code == 0, ran.output
    history = json.loads(run_cli("ledger", "--ledger", str(ledger), "--format", "json").stdout)
    assert history["calibration"]["overall"] is None  # nothing measured in the predictions' terms
    assert schema_errors(history, "ledger_history.schema.json") == []
    assert [c["predicted"] for c in history["changes"]] == [None, None]
    assert [c["measured"] for c in history["changes"]] == [None, None]


def test_a_features_own_prior_replaces_the_default():
    rule = GRAPH.ruleset.feature("feature.fsdp-forward-prefetch")
    assert rule is not None and rule.ceiling is not None
    own = dataclasses.replace(
        rule, ceiling=dataclasses.replace(rule.ceiling, efficacy=Efficacy(0.5, 0.6))
    )
    predicted = predict(_recommendation(10.0, 10.0), own, 100.0, tokens_known=True)
    assert predicted is not None
    assert predicted.efficacy_from == "feature-prior" and predicted.metric == "time_per_token"
    assert (predicted.low, predicted.expected, predicted.high) == pytest.approx(
        (-0.06, -0.055, -0.05)
    )


def test_a_change_without_a_ceiling_is_predicted_from_its_bottlenecks_cost():
    cause = Bottleneck("bottleneck.compute", "high", 0.2, [], "")
    rec = dataclasses.replace(_recommendation(1.0, 1.0), reach=None, cause=cause)
    predicted = predict(rec, None, 50.0, tokens_known=False)
    assert predicted is not None and predicted.addressed_by == "bottleneck-cost"
    assert predicted.bound_ms == pytest.approx(10.0)
    assert predicted.efficacy_from == "unbounded-prior"
    low, high = priors().unbounded
    assert predicted.low == pytest.approx(-0.2 * high) and predicted.high == pytest.approx(
        -0.2 * low
    )


def test_the_ceiling_on_a_real_job_is_stated_as_a_bound_in_json_and_in_words(tmp_path: Path):
    """Qwen3 PP2 with an FSDP2 config: the chosen change's ceiling is what its mechanism can
    remove at most; the JSON says so as a bound, the text and the report's bottleneck table say
    "at most"."""
    from tests.conftest import REAL

    profile = REAL / "ascend-qwen3-pp2-4rank"
    config = REAL / "mindspeed-fsdp2-configs" / "qwen3__pretrain_qwen3_8b_4k_fsdp2_A2.yaml"
    if not profile.is_dir() or not config.is_file():
        pytest.skip("../shared/real is not beside the checkout")
    ran = run_cli("suggest", str(profile), str(config), "--no-ledger", "--format", "json")
    assert ran.exit_code == 0, ran.stderr
    payload = json.loads(ran.stdout)
    assert schema_errors(payload, "suggestion.schema.json") == []
    ceiling = payload["recommendation"]["ceiling"]
    assert ceiling["bound"] == "at-most" and ceiling["ms"] > 0 and 0 < ceiling["ratio"] < 1
    assert "ceiling_ms" not in payload["recommendation"]
    predicted = payload["recommendation"]["predicted"]["change_ms"]
    assert -predicted["low"] <= ceiling["ms"] + 1e-3
    text = run_cli("suggest", str(profile), str(config), "--no-ledger").stdout
    assert f"Ceiling: it can recover at most {ceiling['ms']:.2f} ms per step" in text
    out = tmp_path / "report.html"
    assert run_cli("report", str(profile), "-o", str(out)).exit_code == 0
    assert 'class="num">at most ' in out.read_text(encoding="utf-8")
