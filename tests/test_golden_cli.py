"""Every command's output on the bundled examples, byte for byte.

The expected outputs live in tests/golden_cli/*.out; regenerate them only on purpose with
ADVISOR_UPDATE_GOLDEN=1 (and review the diff): a change here is a change users see.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden_cli"
INPUTS = "tests/golden_cli/inputs"
PROFILES = "examples/profiles"
CONFIG = "examples/fsdp2/config.yaml"
LAUNCH = "examples/fsdp2/run.sh"

CASES: dict[str, list[str]] = {
    "facts-comm-bound": ["facts", f"{PROFILES}/comm-bound", "--notes"],
    "facts-slow-rank-json": ["facts", f"{PROFILES}/slow-rank", "--format", "json"],
    "facts-level0": ["facts", f"{PROFILES}/level0"],
    "rules-list": ["rules", "list"],
    "rules-show-task-queue": ["rules", "show", "feature.task-queue-level2"],
    "rules-show-symptom": ["rules", "show", "symptom.aicpu-kernels"],
    "rules-show-policy": ["rules", "show", "policy.alloc-conf-invalid"],
    "rules-graph-dot": ["rules", "graph"],
    "compare-json": [
        "compare",
        f"{PROFILES}/comm-bound",
        f"{PROFILES}/healthy",
        "--format",
        "json",
    ],
    "compare-text": ["compare", f"{PROFILES}/host-bound", f"{PROFILES}/healthy"],
    "estimate-8b": [
        "estimate",
        "--model-config",
        "examples/models/qwen3-8b.json",
        "--config",
        CONFIG,
    ],
    "estimate-moe-json": [
        "estimate",
        "--model-config",
        "examples/models/qwen3-30b-a3b.json",
        "--format",
        "json",
    ],
}
for profile in sorted(p.name for p in (ROOT / PROFILES).iterdir() if p.is_dir()):
    CASES[f"diagnose-{profile}"] = ["diagnose", f"{PROFILES}/{profile}", "--config", CONFIG]
    CASES[f"diagnose-{profile}-json"] = [
        "diagnose",
        f"{PROFILES}/{profile}",
        "--launch",
        LAUNCH,
        "--format",
        "json",
    ]
    CASES[f"suggest-{profile}"] = [
        "suggest",
        f"{PROFILES}/{profile}",
        CONFIG,
        "--launch",
        LAUNCH,
        "--no-ledger",
    ]
    CASES[f"suggest-{profile}-json"] = [
        "suggest",
        f"{PROFILES}/{profile}",
        CONFIG,
        "--no-ledger",
        "--format",
        "json",
    ]
CASES["suggest-comm-bound-diff"] = [
    "suggest",
    f"{PROFILES}/comm-bound",
    CONFIG,
    "--launch",
    LAUNCH,
    "--no-ledger",
    "--format",
    "diff",
]
# a healthy step at 61 of 64 GiB on a 910B: memory pressure, and the remedy its attribution fits
CASES["diagnose-memory-pressure-910b"] = [
    "diagnose",
    f"{PROFILES}/memory-pressure",
    "--device",
    "910B",
]
CASES["suggest-memory-pressure-910b"] = [
    "suggest",
    f"{PROFILES}/memory-pressure",
    CONFIG,
    "--launch",
    LAUNCH,
    "--no-ledger",
    "--device",
    "910B",
]
CASES["suggest-bad-config"] = [
    "suggest",
    f"{PROFILES}/comm-bound",
    f"{INPUTS}/bad-config.yaml",
    "--no-ledger",
]
_CHECKED = [f"{INPUTS}/bad-config.yaml", f"{INPUTS}/mf-config.yaml", CONFIG]
_SCRIPTS = ["--launch", f"{INPUTS}/bad-run.sh", "--launch", LAUNCH]
for fmt in ("text", "json", "sarif", "github"):
    CASES[f"check-{fmt}"] = ["check", *_CHECKED, *_SCRIPTS, "--format", fmt, "--fail-on", "note"]
CASES["check-example-clean"] = ["check", CONFIG, "--launch", LAUNCH]
CASES["error-missing-profile"] = ["facts", "no/such/profile"]


def _run(args: list[str]) -> str:
    result = CliRunner().invoke(app, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        text = f"exception: {type(result.exception).__name__}: {result.exception}\n"
    else:
        text = ""
    out = f"$ advisor {' '.join(args)}\nexit {result.exit_code}\n{text}{result.stdout}"
    # absolute paths (rule files, SARIF URIs outside the checkout) differ between clones
    return out.replace(str(ROOT), "<checkout>")


@pytest.mark.parametrize("name", sorted(CASES))
def test_command_output_is_unchanged(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    got = _run(CASES[name])
    path = GOLDEN / f"{name}.out"
    if os.environ.get("ADVISOR_UPDATE_GOLDEN") == "1":
        path.write_text(got, encoding="utf-8")
    assert path.is_file(), f"{path} missing: run with ADVISOR_UPDATE_GOLDEN=1 to create it"
    assert got == path.read_text(encoding="utf-8")
