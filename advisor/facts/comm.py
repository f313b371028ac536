"""Communication facts from communication.json (Level1 and above)."""

from __future__ import annotations

from collections import defaultdict

from advisor.facts.base import Recorder, SteadySteps
from advisor.facts.contract import Deriver, RankInputs, Scope
from advisor.facts.groups import GROUP_FACT, rank_groups
from advisor.facts.wording import collective_tasks, comm_time_column
from advisor.inputs.analyzer_rules import analyzer_rules
from advisor.inputs.taxonomy import Taxonomy
from advisor.parsers.profile_data import CommStep

COMM = "communication.json"
COMM_FACTS = (
    "comm.time_ms_by_op",
    "comm.time_ms_per_step",
    "comm.bandwidth_gbps_by_link",
    "comm.wait_ratio",
    *(f"comm.{family}_share" for family in ("allgather", "reducescatter", "allreduce", "alltoall")),
    "comm.p2p_share",
    "comm.p2p_ratio",
    "job.data_parallel",
    "job.pipeline_parallel",
    "job.expert_parallel",
    GROUP_FACT,
)


def _steady(steps: list[CommStep], steady: SteadySteps, source: str) -> tuple[list[CommStep], str]:
    wanted = {int(label) for label in steady.labels if label.isdigit()}
    matched = [s for s in steps if s.step in wanted]
    if matched:
        return matched, f"{source} {steady.note}"
    if len(steps) > 1:
        ordered = sorted(steps, key=lambda s: (s.step is None, s.step or 0))
        return ordered[1:], f"{source}: {len(ordered) - 1} step(s), first dropped (warm-up)"
    return steps, f"{source}: single step"


def _composition(
    by_op: dict[str, float],
    n: int,
    taxonomy: Taxonomy,
    out: Recorder,
    source: str,
    where: str,
    note: str,
) -> None:
    """What kind of communication the job does: shares by family, and what that says of the
    job's parallelism (presence only: no thresholds)."""
    total = sum(by_op.values())
    if total <= 0:
        for fact_id in COMM_FACTS[4:-1]:
            out.miss(fact_id, f"{source} records no communication time")
        return
    for family in ("allgather", "reducescatter", "allreduce", "alltoall"):
        out.add(
            f"comm.{family}_share",
            by_op.get(family, 0.0) / total,
            where,
            f"{family} / all communication over {note}",
        )
    p2p = sum(ms for kind, ms in by_op.items() if kind in taxonomy.p2p_kinds)
    kinds = ", ".join(sorted(k for k in by_op if k in taxonomy.p2p_kinds)) or "none"
    out.add("comm.p2p_share", p2p / total, where, f"{kinds} / all communication over {note}")
    step = out.facts.get("step.time_ms")
    if step is not None and isinstance(step.value, int | float) and step.value > 0:
        out.add(
            "comm.p2p_ratio",
            p2p / n / float(step.value),
            where,
            f"send/recv ms per step ({kinds}) / step.time_ms; over {note}",
        )
    else:
        out.miss("comm.p2p_ratio", "no step time to relate the send/recv time to")
    sharded = by_op.get("allgather", 0.0) > 0 and by_op.get("reducescatter", 0.0) > 0
    allreduce = by_op.get("allreduce", 0.0) > 0
    style = {
        (True, True): "sharded + all-reduce",
        (True, False): "sharded",
        (False, True): "all-reduce",
        (False, False): "none",
    }[(sharded, allreduce)]
    out.add(
        "job.data_parallel",
        style,
        where,
        "sharded: all-gather and reduce-scatter both present (FSDP, ZeRO); all-reduce: DDP-style",
    )
    out.add("job.pipeline_parallel", p2p > 0, where, f"send/recv kinds present: {kinds}")
    out.add(
        "job.expert_parallel",
        by_op.get("alltoall", 0.0) > 0,
        where,
        "all-to-all present (MoE token dispatch or Ulysses context parallelism)",
    )


def _bandwidth(
    size: dict[str, float], time: dict[str, float], out: Recorder, source: str, note: str
) -> None:
    # SDMA is the on-chip copy engine's total of the transfers over the device's own links
    # (HCCS, PCIE, SIO), not a link: its bandwidth would repeat theirs
    copies = analyzer_rules().sdma_total
    bandwidth = {
        link: round(size[link] / time[link], 6)
        for link in sorted(size)
        if time[link] > 0 and link != copies
    }
    if bandwidth:
        out.add(
            "comm.bandwidth_gbps_by_link",
            bandwidth,
            f"{source}:Communication Bandwidth Info",
            f"sum of Transit Size(MB) / sum of Transit Time(ms) per link over {note}"
            + (
                f"; {copies} (the copy engine's total of the links above) is not a link"
                if copies in size
                else ""
            ),
        )
    else:
        out.miss("comm.bandwidth_gbps_by_link", f"{source} records no transit time on any link")


def derive(given: RankInputs, out: Recorder) -> None:
    rank, taxonomy, source = given.profile, given.taxonomy, given.comm_source or COMM
    if rank.comm is None:
        if rank.origin is not None:  # a PyTorch trace: its collectives are kernels
            for fact_id in COMM_FACTS:
                out.miss(fact_id, f"{rank.origin} has no {collective_tasks(rank)}")
            return
        reason = rank.absent.get(COMM, "not in the profile")
        if reason == "not in the profile" and (rank.level or "").startswith("Level0"):
            reason = "not in the profile (Level0 writes no communication files)"
        for fact_id in COMM_FACTS:
            out.miss(fact_id, f"{COMM} {reason}")
        return
    steps, note = _steady(rank.comm, given.steady.steps, source)
    n = len(steps)
    by_op: dict[str, float] = defaultdict(float)
    wait = elapse = 0.0
    size: dict[str, float] = defaultdict(float)
    time: dict[str, float] = defaultdict(float)
    for s in steps:
        for kind, ms in s.elapse_ms.items():
            by_op[kind] += ms
            elapse += ms
        wait += sum(s.wait_ms.values())
        for link, mb in s.link_size_mb.items():
            size[link] += mb
            time[link] += s.link_time_ms.get(link, 0.0)
    out.add(
        "comm.time_ms_by_op",
        {k: round(v / n, 6) for k, v in sorted(by_op.items())},
        comm_time_column(rank, source),
        f"mean per step over {note}; 'Total Op Info' excluded",
    )
    out.add(
        "comm.time_ms_per_step",
        elapse / n,
        comm_time_column(rank, source),
        f"mean per step over {note}",
    )
    _bandwidth(size, time, out, source, note)
    if not all(st.has_wait for st in steps):
        out.miss(
            "comm.wait_ratio",
            f"{source} records no wait time (a PyTorch trace shows NCCL kernels only)",
        )
    elif elapse > 0:
        out.add(
            "comm.wait_ratio",
            wait / elapse,
            f"{source}:Wait Time(ms)",
            f"sum of wait / sum of elapse over {note}",
        )
    else:
        out.miss("comm.wait_ratio", f"{source} records no communication time")
    _composition(dict(by_op), n, taxonomy, out, source, comm_time_column(rank, source), note)
    rank_groups(rank, steps, out, (source, note), taxonomy.tp_group_names)


DERIVER = Deriver[RankInputs](
    name="comm",
    scope=Scope.RANK,
    inputs=frozenset({"profile", "taxonomy", "steady", "comm_source"}),
    # send/recv time is related to the step time
    reads=frozenset({"step.time_ms"}),
    writes=frozenset({*COMM_FACTS, "comm.tp_share"}),
    derive=derive,
)
