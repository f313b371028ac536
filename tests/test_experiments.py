"""The measurements the seeds prescribe before a change: the input pipeline isolated when it is
suspected but not proven, more ranks profiled once one rank is waited for, shapes and stacks
recorded when a hot operator must be located."""

from __future__ import annotations

from pathlib import Path

from advisor.app.job import JobOptions
from advisor.app.suggest import SuggestOptions, run_suggest
from tests.synth import PRESETS, write_profile

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "examples" / "fsdp2" / "config.yaml"
LAUNCH = ROOT / "examples" / "fsdp2" / "run.sh"


def _suggest(tmp_path: Path, preset: str, **changes: object):
    prof = tmp_path / "prof"
    write_profile(prof, PRESETS[preset].with_(**{"steps": 4, "layers": 2, **changes}))
    job = JobOptions(profile=prof, config=CONFIG, launch=LAUNCH)
    return run_suggest(job, options=SuggestOptions(use_ledger=False)).suggestion


def test_a_suspected_input_pipeline_gets_the_isolation_experiment(tmp_path: Path) -> None:
    # the loader measured at ~7% of the step: suggestive, below the starving 10%
    suggestion = _suggest(tmp_path, "healthy", dataloader_us=400.0)
    rec = suggestion.recommendation
    assert rec is not None and rec.feature == "feature.data-isolation-experiment", suggestion
    assert rec.patch is None and "if step.time_ms falls" in rec.advice


def test_a_proven_input_pipeline_gets_the_fix(tmp_path: Path) -> None:
    rec = _suggest(tmp_path, "slow-dataloader").recommendation
    assert rec is not None and rec.feature == "feature.dataloader-workers"


def test_waiting_on_one_profiled_rank_widens_the_profile(tmp_path: Path) -> None:
    # collectives wait 70% of their time and expose none: a late peer, not the network
    suggestion = _suggest(tmp_path, "healthy", comm_wait_ratio=0.7, comm_exposed_us=0.0)
    rec = suggestion.recommendation
    assert rec is not None
    # indicated: proposed once the cheaper FSDP2 settings before it in the try order are done
    codes = {r.feature: r.code.value for r in suggestion.rejected}
    assert (
        rec.feature == "feature.widen-profile-ranks"
        or codes.get("feature.widen-profile-ranks") == "try-order"
    ), (rec.feature, codes)


def test_several_profiled_ranks_need_no_widening(tmp_path: Path) -> None:
    from tests.synth import write_cluster

    write_cluster(
        tmp_path / "prof", PRESETS["healthy"].with_(steps=4, layers=2, comm_wait_ratio=0.7), ranks=8
    )
    job = JobOptions(profile=tmp_path / "prof", config=CONFIG, launch=LAUNCH)
    suggestion = run_suggest(job, options=SuggestOptions(use_ledger=False)).suggestion
    codes = {r.feature: r.code.value for r in suggestion.rejected}
    rec = suggestion.recommendation
    assert (rec is None or rec.feature != "feature.widen-profile-ranks") and codes.get(
        "feature.widen-profile-ranks"
    ) in (None, "not-indicated")
