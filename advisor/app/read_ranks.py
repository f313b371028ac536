"""Read every rank of a profile through an executor, in one or two tiers.

One tier: every rank read in full. Two tiers (large clusters, `--deep auto|N`): the step model
of every rank first (cheap), then the full profile of the ranks that matter — the slowest and
the fastest of each pipeline stage and an even sample — so the slow-rank, stage and bubble
facts see every rank while attribution rests on the ranks read in full. `--deep 0` stops after
the first tier (a quick straggler and stage scan of a very large job).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from advisor.app.executors import Executor
from advisor.app.ranks import KINETO, RankOutcome, RankTask, extract_rank
from advisor.facts import stages
from advisor.facts.rank import RankSummary
from advisor.inputs import progress
from advisor.inputs.thresholds import ClusterThresholds, fact_thresholds
from advisor.model import InputError

DEEP_ALL = "all"
DEEP_AUTO = "auto"


@dataclass(frozen=True)
class ReadOptions:
    jobs: int | None = None  # local worker processes (None: every core)
    scheduler: str | None = None  # a Dask scheduler address (or ADVISOR_SCHEDULER)
    deep: str = DEEP_AUTO  # all, auto or a number of ranks read in full


@dataclass
class RankReading:
    summaries: list[RankSummary]
    warnings: list[str]
    coverage: str  # appended to profile.ranks' note


def parse_deep(text: str) -> int | None:
    """None for all; -1 for auto; a count for N (0: the cheap tier only); raises otherwise."""
    if text == DEEP_ALL:
        return None
    if text == DEEP_AUTO:
        return -1
    if text.isdigit():
        return int(text)
    raise InputError("--deep", f"expected all, auto or a number of ranks >= 0, got {text!r}")


def _run(
    executor: Executor, tasks: list[RankTask], label: str, skip_bad: bool
) -> tuple[list[RankOutcome], list[RankOutcome]]:
    done: list[RankOutcome] = []
    failed: list[RankOutcome] = []
    with progress.task(label, len(tasks), "ranks") as bar:
        for outcome in executor.map_unordered(extract_rank, tasks):
            if outcome.failed:
                if not skip_bad or len(tasks) == 1:
                    hint = " (--skip-bad-files reads the other ranks)" if len(tasks) > 1 else ""
                    raise InputError(outcome.where, f"{outcome.problem}{hint}")
                failed.append(outcome)
            else:
                done.append(outcome)
            bar.advance()
    return done, failed


def _order(outcome: RankOutcome) -> tuple[bool, int, str]:
    summary = outcome.summary
    rank = summary.rank if summary is not None else None
    return (rank is None, rank if rank is not None else 0, str(outcome.task.path))


def _step_ms(summary: RankSummary) -> float | None:
    fact = summary.facts.get("step.time_ms")
    value = fact.value if fact is not None else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def choose_deep(summaries: list[RankSummary], count: int) -> list[int]:
    """Indexes of the ranks to read in full: the slowest and fastest of each stage (stages
    inferred from the step model), then an even sample until `count` are chosen."""
    timed = [i for i, s in enumerate(summaries) if _step_ms(s) is not None]
    labels = {str(i): summaries[i].facts for i in timed}
    # the step model cannot tell a pipeline (no send/recv yet): group by compute alone, so a
    # stage or a straggler apart from its peers has its extremes read
    # the stages as the facts group them, so the ranks read in full are each stage's extremes
    gap = fact_thresholds().stage_split_gap
    groups = stages.compute_groups(labels, gap) if len(timed) >= 2 else None
    chosen: list[int] = []
    for group in groups or [[str(i) for i in timed]]:
        members = [int(label) for label in group]
        by_time = sorted(members, key=lambda i: (_step_ms(summaries[i]) or 0.0, i))
        for pick in (by_time[-1], by_time[0]):
            if pick not in chosen:
                chosen.append(pick)
    # every stage's extremes are read; an even sample of the others fills up to `count`
    rest = [i for i in range(len(summaries)) if i not in chosen]
    want = max(count - len(chosen), 0)
    if want and rest:
        stride = len(rest) / want
        chosen.extend({rest[min(int(k * stride), len(rest) - 1)] for k in range(want)})
    return sorted(chosen)


def _two_tier(tasks: list[RankTask], deep: int | None, limits: ClusterThresholds) -> bool:
    """Whether the step models are read first and only some ranks in full (never for PyTorch
    traces, which have no step model apart)."""
    if not tasks or tasks[0].kind == KINETO or deep is None:
        return False
    if deep >= 0:
        return deep < len(tasks)
    return len(tasks) > limits.deep_all_max_ranks


def _read_all(
    tasks: list[RankTask], executor: Executor, deep: int | None, skip_bad: bool
) -> RankReading:
    done, failed = _run(executor, tasks, "reading ranks", skip_bad)
    how = ""
    if deep == 0 and tasks and tasks[0].kind == KINETO:
        how = "; read in full: a PyTorch trace has no step model apart (--deep 0 ignored)"
    return _result(done, failed, len(tasks), how)


def _read_two_tiers(
    tasks: list[RankTask],
    executor: Executor,
    deep: int | None,
    limits: ClusterThresholds,
    skip_bad: bool,
) -> RankReading:
    cheap, failed = _run(
        executor, [replace(t, deep=False) for t in tasks], "reading step models", skip_bad
    )
    if deep == 0:
        how = (
            "; step models and communication summaries only (--deep 0): no rank read in "
            "full, so no attribution, operator or memory detail"
        )
        return _result(cheap, failed, len(tasks), how)
    cheap.sort(key=_order)
    summaries = [o.summary for o in cheap if o.summary is not None]
    count = deep if deep is not None and deep > 0 else limits.deep_sample_ranks
    picked = choose_deep(summaries, count)
    full, failed_deep = _run(
        executor,
        [replace(cheap[i].task, deep=True) for i in picked],
        "reading ranks in full",
        skip_bad,
    )
    by_path = {o.task.path: o for o in full}
    merged = [by_path.get(o.task.path, o) for o in cheap]
    chosen = sorted((o.summary.label for o in full if o.summary is not None), key=_label_order)
    how = (
        f"; two tiers: the step model of all {len(merged)} ranks, the full profile of "
        f"{len(full)} ({_short(chosen)}: the slowest and fastest of each stage and an even "
        "sample; --deep all reads every rank in full)"
    )
    return _result(merged, failed + failed_deep, len(tasks), how)


def read_ranks(
    tasks: list[RankTask],
    executor: Executor,
    options: ReadOptions,
    limits: ClusterThresholds,
    skip_bad: bool,
) -> RankReading:
    deep = parse_deep(options.deep)
    if _two_tier(tasks, deep, limits):
        return _read_two_tiers(tasks, executor, deep, limits, skip_bad)
    return _read_all(tasks, executor, deep, skip_bad)


def _label_order(label: str) -> tuple[int, str]:
    tail = label.removeprefix("rank ")
    return (int(tail), "") if tail.isdigit() else (1 << 30, label)


def _short(labels: list[str]) -> str:
    shown = ", ".join(labels[:12])
    return shown + (f" and {len(labels) - 12} more" if len(labels) > 12 else "")


def _result(
    done: list[RankOutcome], failed: list[RankOutcome], total: int, how: str
) -> RankReading:
    done.sort(key=_order)
    summaries = [o.summary for o in done if o.summary is not None]
    warnings = [w for s in summaries for w in s.warnings]
    for outcome in sorted(failed, key=lambda o: str(o.task.path)):
        warnings.append(f"{outcome.where}: {outcome.problem} (rank directory skipped)")
    if failed and not summaries:
        first = failed[0]
        raise InputError(first.where, f"{first.problem}; no rank could be read")
    coverage = how
    if failed:
        names = _short(sorted(o.task.path.name for o in failed))
        coverage += (
            f"; {len(summaries)} of {total} ranks: {len(failed)} could not be read ({names})"
        )
    return RankReading(summaries, warnings, coverage)
