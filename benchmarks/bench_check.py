"""Benchmark `advisor check`: start-up and checking time on 40 config files, and one run per
upstream repository folder as CI runs it (wall time, peak memory, findings by rule).

    python benchmarks/bench_check.py [--files 40]
    python -m benchmarks.bench_check --corpus [DIR] [--only NAME] [--save SARIF_DIR]
                                            # the repositories of benchmarks/corpus.py

The configs are variations of examples/fsdp2/config.yaml (some with problems to report), plus
the example launch script. With --corpus each repository is checked by `advisor check .
--format sarif` in its own process (the CI recipe); its peak resident memory is read from the
process's own accounting (wait4), and must stay under the 600 MB the issue sets.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

started = time.perf_counter()
from advisor.app.check import run_check  # noqa: E402
from advisor.app.rulesets import load_policies  # noqa: E402

imported = time.perf_counter()
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fsdp2"
VARIANTS = (
    "",
    "  indexer_loss_coeff: 0.01\n",  # appended to optimization: a misplaced key
    "  use_flash_attn: true\n",  # not read by qwen3_moe
    "  chunk_loss_size: 1024\n",
)


MEMORY_LIMIT_MB = 600


def _one_folder(
    folder: Path, save: Path | None = None
) -> tuple[float, float, int, list[dict[str, object]]]:
    """(seconds, peak MB, exit code, SARIF results) of `advisor check .` run in the folder
    (`save`: where its SARIF is kept, to read the findings one by one)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "advisor", "check", ".", "--format", "sarif", "-q"],
            cwd=folder,
            stdout=out,
            stderr=subprocess.DEVNULL,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8")
    seconds = time.perf_counter() - started
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)
        (save / f"{folder.name}.sarif").write_text(text, encoding="utf-8")
    results = json.loads(text)["runs"][0]["results"] if proc.returncode in (0, 1) else []
    return seconds, usage.ru_maxrss / 1024, proc.returncode, results


def corpus_run(base: Path | None, only: list[str] | None = None, save: Path | None = None) -> None:
    from benchmarks.corpus import corpus

    found = corpus(base)
    worst = 0.0
    for name, folder in found.items():
        if only and name not in only:
            continue
        if not isinstance(folder, Path):
            print(f"{name:30} skipped: {folder}")
            continue
        seconds, peak, code, results = _one_folder(folder, save)
        worst = max(worst, peak)
        files = sum(1 for p in folder.rglob("*") if p.suffix in (".sh", ".yaml", ".yml"))
        print(
            f"{name:30} {files:5} files  {seconds:6.1f} s  peak {peak:6.0f} MB  exit {code}  "
            f"{len(results)} findings"
        )
        by_rule = collections.Counter(str(r["ruleId"]) for r in results)
        for rule, count in by_rule.most_common():
            print(f"    {count:4}  {rule}")
    verdict = "under" if worst < MEMORY_LIMIT_MB else "OVER"
    print(f"largest peak {worst:.0f} MB: {verdict} the {MEMORY_LIMIT_MB} MB of one folder run")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument(
        "--corpus",
        nargs="?",
        const="",
        default=None,
        help="check each upstream repository (folder: where benchmarks/corpus.py puts them)",
    )
    parser.add_argument(
        "--only", action="append", help="with --corpus: only this repository (repeatable)"
    )
    parser.add_argument(
        "--save", type=Path, default=None, help="with --corpus: keep each folder's SARIF here"
    )
    args = parser.parse_args()
    if args.corpus is not None:
        corpus_run(Path(args.corpus) if args.corpus else None, args.only, args.save)
        return
    base = (EXAMPLE / "config.yaml").read_text()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        configs = []
        for i in range(args.files):
            path = folder / f"config_{i:02d}.yaml"
            path.write_text(base + VARIANTS[i % len(VARIANTS)])
            configs.append(path)
        t0 = time.perf_counter()
        rules = load_policies()
        t1 = time.perf_counter()
        result = run_check(rules, configs=configs, launches=[EXAMPLE / "run.sh"])
        t2 = time.perf_counter()
    print(f"python start-up + imports {imported - started:8.3f} s")
    print(f"load {len(rules.rules)} policy rules    {t1 - t0:8.3f} s")
    print(
        f"check {args.files} configs + 1 script {t2 - t1:8.3f} s  ({len(result.findings)} findings)"
    )


if __name__ == "__main__":
    main()
