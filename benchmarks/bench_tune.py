"""Exhaustive search over the simulated job's knobs: the best a blind grid search finds, and how
many runs it took, for a tuning loop to be measured against ("within 15% of the best").

    python -m benchmarks.bench_tune [--grid full|small] [--response FILE | --all] [--top 5]
                                    [--no-tune]

Every combination of the knobs below is run through the simulator of examples/simulated-job
(the same code that writes its log and profile; no files are written here), starting from the
example's config.yaml and the environment its run.sh exports. Runs that die of out-of-memory
count as runs. The micro-batch is not searched by default: it changes the global batch, which a
tuning comparison holds fixed. Add it to a grid and the combinations, which then differ in
tokens per step, are still ranked fairly: by time per token.

Then `advisor tune` runs the closed loop on a copy of the example (real runs of the simulator
through its launch script, with the same response model) and both are printed: the loop's runs,
its final step and how far it is from the exhaustive best. `--all` does both for the example's
response model and every one in examples/simulated-job/responses/, and ends with one line each.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "examples" / "simulated-job"
sys.path.insert(0, str(JOB))

from simjob.job import simulate  # noqa: E402
from simjob.response import load_response  # noqa: E402
from simjob.settings import read_settings  # noqa: E402

ENV = "env:"  # knob names starting with this are environment variables, others config keys
# the knobs the simulator responds to, with the values a tuner would try
FULL: dict[str, list[str]] = {
    "env:TASK_QUEUE_ENABLE": ["0", "2"],
    "env:PYTORCH_NPU_ALLOC_CONF": ["", "expandable_segments:True"],
    "optimization.use_fused_rmsnorm": ["false", "true"],
    "optimization.use_fused_rotary_pos_emb": ["false", "true"],
    "optimization.moe_grouped_gemm": ["false", "true"],
    "parallel.num_to_forward_prefetch": ["0", "1", "2"],
    "parallel.num_to_backward_prefetch": ["0", "1", "2"],
    "training.dataloader_num_workers": ["0", "2", "4"],
    "parallel.recompute": ["false", "true"],
}
# 32 runs: one switch per problem of the baseline (the fusions together, both prefetches)
SMALL: dict[str, list[str]] = {
    "env:TASK_QUEUE_ENABLE": ["0", "2"],
    "env:PYTORCH_NPU_ALLOC_CONF": ["", "expandable_segments:True"],
    "fusions": ["false", "true"],
    "prefetch": ["0", "1"],
    "training.dataloader_num_workers": ["0", "2"],
}
GROUPS = {
    "fusions": (
        "optimization.use_fused_rmsnorm",
        "optimization.use_fused_rotary_pos_emb",
        "optimization.moe_grouped_gemm",
    ),
    "prefetch": ("parallel.num_to_forward_prefetch", "parallel.num_to_backward_prefetch"),
}
_EXPORT = re.compile(r"^\s*export\s+([A-Za-z_][A-Za-z0-9_]*)=(\S*)\s*$")


@dataclass(frozen=True)
class Result:
    knobs: dict[str, str]
    step_ms: float | None  # None: out of memory
    ms_per_ktoken: float | None


def launch_env(script: Path) -> dict[str, str]:
    """The plain `export NAME=value` lines of a launch script (the example's are all plain)."""
    env = {}
    for line in script.read_text(encoding="utf-8").splitlines():
        m = _EXPORT.match(line)
        if m:
            env[m.group(1)] = m.group(2).strip("\"'")
    return env


def run_one(knobs: dict[str, str], model: dict[str, Any], base_env: dict[str, str]) -> Result:
    env = {**base_env, "WORLD_SIZE": "8"}
    argv = [str(JOB / "config.yaml"), "--training.max_steps", "5"]
    for name, value in knobs.items():
        for key in GROUPS.get(name, (name,)):
            if key.startswith(ENV):
                env[key[len(ENV) :]] = value
            else:
                argv += [f"--{key}", value]
    settings = read_settings(argv, env, JOB)
    outcome = simulate(settings, model)
    step = outcome.steady_step_ms
    samples = outcome.recipe.samples * outcome.recipe.micro_batches
    tokens = samples * settings.number("data.cutoff_len")
    per_ktoken = None if step is None else step / tokens * 1000.0
    return Result(knobs, step, per_ktoken)


def search(grid: dict[str, list[str]], model: dict[str, Any], env: dict[str, str]) -> list[Result]:
    names = list(grid)
    return [
        run_one(dict(zip(names, values, strict=True)), model, env)
        for values in itertools.product(*(grid[n] for n in names))
    ]


def _show(r: Result) -> str:
    knobs = ", ".join(f"{k.removeprefix(ENV)}={v or '(unset)'}" for k, v in r.knobs.items())
    knobs = knobs or "as configured"
    if r.step_ms is None:
        return f"  out of memory        {knobs}"
    return f"  {r.step_ms:8.2f} ms/step  {r.ms_per_ktoken:6.3f} ms/ktoken  {knobs}"


def _report(baseline: Result, results: list[Result], top: int, took: float) -> None:
    ran = sorted((r for r in results if r.step_ms is not None), key=lambda r: r.ms_per_ktoken or 0)
    print(f"exhaustive search: {len(results)} runs ({len(results) - len(ran)} out of memory)")
    print(f"  took {took:.1f} s")
    if baseline.step_ms is None or not ran:
        print("the baseline or every combination runs out of memory: nothing to compare")
        return
    best = ran[0]
    share = (best.ms_per_ktoken or 0) / (baseline.ms_per_ktoken or 1)
    print(f"baseline:{_show(baseline)[1:]}")
    print(f"best:    {_show(best)[1:]}")
    print(f"  {share:.1%} of the baseline's time per token")
    print(f"top {top} by time per token:")
    for r in ran[:top]:
        print(_show(r))


def run_tune(response: Path, max_changes: int) -> dict[str, Any]:
    """`advisor tune` on a scratch copy of the example: its advisor/tune@1 JSON."""
    with tempfile.TemporaryDirectory() as scratch:
        job = Path(scratch) / "simulated-job"
        shutil.copytree(JOB, job, ignore=shutil.ignore_patterns("profile", "output", ".advisor"))
        env = {**os.environ, "SIMJOB_RESPONSE": str(response.resolve())}
        env.setdefault("SIMJOB_PYTHON", sys.executable)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        command = [sys.executable, "-m", "advisor", "tune", "config.yaml", "--launch", "run.sh"]
        command += ["--run", "bash run.sh", "--max-changes", str(max_changes), "--format", "json"]
        done = subprocess.run(
            command, cwd=job, env=env, capture_output=True, text=True, check=False
        )
        if not done.stdout.strip():
            raise SystemExit(f"advisor tune failed: {done.stderr.strip()}")
        payload: dict[str, Any] = json.loads(done.stdout)
        return payload


def _report_tune(payload: dict[str, Any], best: Result | None, took: float) -> None:
    base, final = payload["baseline"], payload["final"]
    print(f"advisor tune: {payload['runs']} runs (the baseline included), took {took:.1f} s")
    for change in payload["changes"]:
        step = (change["measured"] or {}).get("step_ms")
        shown = f"{step:8.2f} ms" if step is not None else "       -   "
        print(f"  run {change['run']!s:>2}  {shown}  {change['verdict']:<7} {change['edit']}")
    if not base or not final or base["step_ms"] is None or final["step_ms"] is None:
        print(f"  stopped: {payload['stop_message']}")
        return
    kept = [c for c in payload["changes"] if c["verdict"] == "keep"]
    reached = final["run"]
    print(
        f"  baseline {base['step_ms']:.2f} ms -> final {final['step_ms']:.2f} ms "
        f"({final['step_ms'] / base['step_ms']:.1%} of the baseline), best reached at run "
        f"{reached}; {len(kept)} changes kept"
    )
    if best is not None and best.step_ms is not None:
        print(
            f"  {final['step_ms'] / best.step_ms - 1:+.1%} from the exhaustive best "
            f"({best.step_ms:.2f} ms)"
        )
    print(f"  stopped: {payload['stop_message']}")


def _one_model(response: Path, args: argparse.Namespace) -> str:
    """The search and the loop on one response model; its summary line."""
    model = load_response(response)
    env = launch_env(JOB / "run.sh")
    started = time.perf_counter()
    baseline = run_one({}, model, env)
    results = search(FULL if args.grid == "full" else SMALL, model, env)
    _report(baseline, results, args.top, time.perf_counter() - started)
    ran = [r for r in results if r.ms_per_ktoken is not None]
    best = min(ran, key=lambda r: r.ms_per_ktoken or 0) if ran else None
    line = f"{response.stem:<12} best {best.step_ms:.1f} ms" if best and best.step_ms else ""
    if args.no_tune:
        return line
    started = time.perf_counter()
    payload = run_tune(response, args.max_changes)
    _report_tune(payload, best, time.perf_counter() - started)
    base, final = payload["baseline"], payload["final"]
    if best is None or best.step_ms is None or not base or not final or not final["step_ms"]:
        return line
    kept = sum(1 for c in payload["changes"] if c["verdict"] == "keep")
    return (
        f"{line} in {len(results)} runs; tune {base['step_ms']:.1f} -> {final['step_ms']:.1f} ms "
        f"({final['step_ms'] / base['step_ms']:.0%} of the baseline, "
        f"{final['step_ms'] / best.step_ms - 1:+.1%} from the best) in {payload['runs']} runs, "
        f"{kept} kept"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--grid", choices=("full", "small"), default="full")
    parser.add_argument("--response", type=Path, default=JOB / "response.yaml")
    parser.add_argument(
        "--all", action="store_true", help="the example's and every responses/*.yaml model"
    )
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--max-changes", type=int, default=9)
    parser.add_argument("--no-tune", action="store_true", help="the exhaustive search only")
    args = parser.parse_args()
    models = [args.response]
    if args.all:
        models = [JOB / "response.yaml", *sorted((JOB / "responses").glob("*.yaml"))]
    lines = []
    for response in models:
        print(f"== {response.relative_to(JOB) if response.is_relative_to(JOB) else response}")
        lines.append(_one_model(response, args))
    if len(models) > 1:
        print("\nsummary:")
        for line in lines:
            print(f"  {line}")


if __name__ == "__main__":
    main()
