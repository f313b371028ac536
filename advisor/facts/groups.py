"""Communication groups: which collectives run in which group of ranks, and what the job's
parallel layout is.

A profile names each collective's group by a key (torch_npu: the `@<hash>` suffix of the HCCL op
name; PyTorch traces: the process group name). The framework's names for the groups ("dp",
"pp", "tp"...) come from the profiler's metadata (parallel_group_info, pg_config). When the keys
differ between the two (older torch_npu), a group is named by its members instead: the ranks
whose profiles carry the key, matched against the recorded groups with exactly those ranks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import median

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, JobInputs, Scope
from advisor.facts.summary import RankSummary
from advisor.parsers.profile_data import CommStep, ProcessGroup, RankProfile

GROUP_FACT = "comm.groups"
LAYOUT_FACT = "job.parallel_sizes"


def rank_groups(
    rank: RankProfile,
    steps: Sequence[CommStep],
    out: Recorder,
    where: tuple[str, str],
    tp_names: frozenset[str],
) -> None:
    """Per rank: ms per steady step of every group, by op kind, named when the key matches.
    `where`: the source and the steady steps' note; `tp_names`: names of tensor-parallel groups."""
    source, note = where
    totals: dict[str, dict[str, float]] = {}
    for step in steps:
        for key, kinds in step.group_ms.items():
            into = totals.setdefault(key, {})
            for kind, ms in kinds.items():
                into[kind] = into.get(kind, 0.0) + ms
    if not totals:
        out.miss(GROUP_FACT, f"{source} does not name the communication group of its collectives")
        return
    n = len(steps)
    rows: list[dict[str, object]] = []
    for key, kinds in totals.items():
        known = rank.process_groups.get(key)
        rows.append(
            {
                "group": key,
                "name": known.name if known else None,
                "ranks": list(known.ranks) if known else None,
                "kinds": {k: round(v / n, 6) for k, v in sorted(kinds.items())},
                "ms_per_step": round(sum(kinds.values()) / n, 6),
            }
        )
    rows.sort(key=_heaviest_first)
    out.add(
        GROUP_FACT, rows, source, f"collectives by communication group, mean per step over {note}"
    )
    _tp_share(rows, out, source, tp_names)


def _tp_share(
    rows: list[dict[str, object]], out: Recorder, source: str, names: frozenset[str]
) -> None:
    total = sum(float(str(r["ms_per_step"])) for r in rows)
    if not any(r["name"] is not None for r in rows) or total <= 0:
        out.miss("comm.tp_share", f"{source} does not name its communication groups")
        return
    tp = [r for r in rows if set(str(r["name"] or "").split("|")) & names]
    share = sum(float(str(r["ms_per_step"])) for r in tp) / total
    out.add(
        "comm.tp_share",
        round(share, 6),
        source,
        f"groups {', '.join(str(r['name']) for r in tp) or 'none'} named tensor-parallel",
    )


def job_groups(
    ranks: Mapping[str, RankSummary], per_rank: Mapping[str, object], job: Recorder
) -> None:
    """Job level: each group with its members and the names the framework gave it.

    `per_rank` maps a rank label to its `comm.groups` value."""
    members: dict[str, list[int]] = {}
    times: dict[str, list[float]] = {}
    kinds: dict[str, dict[str, list[float]]] = {}
    named: dict[str, ProcessGroup] = {}
    for label, listed in per_rank.items():
        rank = ranks[label]
        for row in listed if isinstance(listed, list) else []:
            key = str(row["group"])
            if rank.rank is not None:
                members.setdefault(key, []).append(rank.rank)
            times.setdefault(key, []).append(float(row["ms_per_step"]))
            for kind, ms in row["kinds"].items():
                kinds.setdefault(key, {}).setdefault(kind, []).append(float(ms))
            if row.get("name") is not None:
                named[key] = ProcessGroup(str(row["name"]), tuple(row["ranks"] or ()))
    if not times:
        return
    recorded = [group for rank in ranks.values() for group in rank.process_groups.values()]
    rows: list[dict[str, object]] = []
    for key, values in times.items():
        seen = tuple(sorted(set(members.get(key, []))))
        group = named.get(key)
        name: str | None
        if group is not None:
            name, group_ranks = group.name, list(group.ranks)
            how = "named by the profiler"
        else:
            names = sorted({g.name for g in recorded if g.ranks == seen}) if len(seen) > 1 else []
            name = "|".join(names) or None
            group_ranks = list(seen)
            how = "matched by members" if names else "members seen"
        rows.append(
            {
                "group": key,
                "name": name,
                "ranks": group_ranks or None,
                "kinds": {k: round(median(v), 6) for k, v in sorted(kinds[key].items())},
                "ms_per_step": round(median(values), 6),
                "how": how,
            }
        )
    rows.sort(key=_heaviest_first)
    job.add(
        GROUP_FACT,
        rows,
        "rank directories",
        "median over the ranks in each group; a group's members are the ranks whose profiles "
        "carry its key; names from profiler_metadata.json parallel_group_info / pg_config",
    )


def derive_job(given: JobInputs, job: Recorder) -> None:
    """The job's groups from the groups each rank directory saw."""
    by_label = {label: rank for (label, _), rank in zip(given.recorders, given.ranks, strict=False)}
    per_rank = {
        label: rec.facts[GROUP_FACT].value
        for label, rec in given.recorders
        if GROUP_FACT in rec.facts
    }
    job_groups(by_label, per_rank, job)


DERIVER = Deriver[JobInputs](
    name="groups",
    scope=Scope.JOB,
    inputs=frozenset({"ranks", "recorders"}),
    reads=frozenset(),
    writes=frozenset({GROUP_FACT}),
    derive=derive_job,
    # rank directories name the groups (the cluster file does not); one rank is its own job
    applies=lambda given: given.several and bool(given.ranks),
)


def recorded_layout(
    recorded: Mapping[str, object], names: Mapping[str, Sequence[str]]
) -> dict[str, int]:
    """Parallel degrees under the advisor's short names (tp, pp, dp...), from argument names
    (profiler distributed_args, a training log's argument dump); whole numbers only."""
    sizes: dict[str, int] = {}
    for short, keys in names.items():
        for key in keys:
            value = recorded.get(key)
            if isinstance(value, str) and value.strip().isdigit():
                value = int(value)
            if isinstance(value, int) and not isinstance(value, bool):
                sizes[short] = value
                break
    return sizes


def _heaviest_first(row: Mapping[str, object]) -> float:
    ms = row["ms_per_step"]
    return -ms if isinstance(ms, float) else 0.0
