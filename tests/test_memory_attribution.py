"""Memory is attributed before it is treated (seed 000): allocator fragmentation gets the
allocator's remedy, and a footprint remedy (ChunkLoss, recompute, CP, EP, offload, swap) only
where the attribution shows the part it shrinks dominating."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_run import run_cli

ROOT = Path(__file__).resolve().parents[1]
FOOTPRINT = {
    "feature.chunk-loss",
    "feature.context-parallel-ulysses",
    "feature.context-parallel-ring",
    "feature.activation-recompute",
    "feature.async-activation-offload",
    "feature.expert-parallel-split",
    "feature.swap-optimizer",
    "feature.chunk-batch",
    "feature.smaller-micro-batch",
    "feature.memory-layout",
}


def _suggest(profile: str = "fragmentation", *extra: str) -> dict[str, object]:
    ran = run_cli(
        "suggest",
        str(ROOT / "examples" / "profiles" / profile),
        str(ROOT / "examples" / "fsdp2" / "config.yaml"),
        "--launch",
        str(ROOT / "examples" / "fsdp2" / "run.sh"),
        "--no-ledger",
        "--format",
        "json",
        *extra,
    )
    assert ran.exit_code == 0, ran.output
    out: dict[str, object] = json.loads(ran.stdout)
    return out


def _feature(out: dict[str, object]) -> str | None:
    rec = out.get("recommendation")
    return rec["feature"] if isinstance(rec, dict) else None


def test_fragmentation_alone_gets_no_footprint_remedy() -> None:
    out = _suggest()
    assert _feature(out) not in FOOTPRINT, out
    # without the device's memory the pressure is unknown, and the output says how to know it
    assert "memory.footprint" in json.dumps(out) and "--device" in json.dumps(out)


def test_fragmentation_with_room_left_gets_no_footprint_remedy_even_with_an_estimate() -> None:
    # 31 of 64 GiB reserved: the peak leaves room, whatever the estimate says dominates
    qwen = str(ROOT / "examples" / "models" / "qwen3-8b.json")
    for extra in (("--device", "910B"), ("--device", "910B", "--model-config", qwen)):
        out = _suggest("fragmentation", *extra)
        assert _feature(out) not in FOOTPRINT, out
        rejected = {r["feature"]: r["code"] for r in out["rejected"]}  # type: ignore[attr-defined]
        assert rejected["feature.chunk-loss"] == "not-indicated"
        assert rejected["feature.activation-recompute"] == "not-indicated"


def test_pressure_on_activations_gets_an_activation_remedy() -> None:
    # 61 of 64 GiB, most of the peak raised and freed within the step
    out = _suggest("memory-pressure", "--device", "910B")
    assert _feature(out) == "feature.chunk-loss", out
    rejected = {r["feature"]: r["code"] for r in out["rejected"]}  # type: ignore[attr-defined]
    # the states' remedies are not indicated: the peak is not theirs
    assert rejected["feature.swap-optimizer"] == "not-indicated"
    assert rejected["feature.expert-parallel-split"] == "not-indicated"


def test_the_chunk_loss_finding_names_the_model_not_the_chunk_size(tmp_path: Path) -> None:
    text = (ROOT / "examples" / "fsdp2" / "config.yaml").read_text()
    text = text.replace("optimization:", "optimization:\n  chunk_loss_size: 1024", 1)
    lines = [
        "  model_id: gpt_oss" if line.strip().startswith("model_id:") else line
        for line in text.splitlines()
    ]
    config = tmp_path / "config.yaml"
    config.write_text("\n".join(lines) + "\n")
    ran = run_cli("check", str(config))
    finding = next(line for line in ran.stdout.splitlines() if "chunk-loss-not-read" in line)
    assert "model_id 'gpt_oss'" in finding and "1024" not in finding
