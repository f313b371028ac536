"""bf16 over fp16 where the device computes bf16 (seed 003): a note in every dialect's check, and
nothing on the bf16 files."""

from __future__ import annotations

from pathlib import Path

from tests.cli_run import run_cli

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "real"


def _findings(path: Path) -> str:
    ran = run_cli("check", str(path), "--fail-on", "error")
    return ran.stdout


def test_fp16_in_each_dialect_gets_the_bf16_note(tmp_path: Path) -> None:
    fsdp2 = (ROOT / "examples" / "fsdp2" / "config.yaml").read_text()
    assert "bf16-where" not in _findings(ROOT / "examples" / "fsdp2" / "config.yaml")
    config = tmp_path / "config.yaml"
    config.write_text(fsdp2.replace("parallel:", "parallel:\n  param_dtype: fp16", 1))
    assert "policy.fsdp2-fp16-where-bf16" in _findings(config)

    mf = REAL / "mindformers-configs" / "pretrain_qwen3_32b_4k.yaml"
    assert 'compute_dtype: "bfloat16"' in mf.read_text()
    assert "policy.mf-fp16-where-bf16" not in _findings(mf)
    mf_fp16 = tmp_path / "mf.yaml"
    mf_fp16.write_text(
        mf.read_text().replace('compute_dtype: "bfloat16"', 'compute_dtype: "float16"')
    )
    assert "policy.mf-fp16-where-bf16" in _findings(mf_fp16)


def test_a_megatron_script_with_fp16_gets_the_note(tmp_path: Path) -> None:
    script = next(iter(sorted((REAL / "mindspeed-llm-scripts").glob("*.sh"))))
    text = script.read_text()
    assert "--bf16" in text
    assert "policy.mg-fp16-where-bf16" not in _findings(script)
    fp16 = tmp_path / "pretrain.sh"
    fp16.write_text(text.replace("--bf16", "--fp16"))
    assert "policy.mg-fp16-where-bf16" in _findings(fp16)
