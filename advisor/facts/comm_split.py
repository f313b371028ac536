"""Where the collectives' time goes, from communication.json's Communication Time Info (or the
analysis database's CommAnalyzerTime): for each op kind and each communication group, the share
of the elapse spent moving data (transit), waiting for the peers (wait) and in the handshake
that starts the transfer (synchronization). A group whose collectives mostly wait is held up by
a late member, not by its links; one whose transit dominates is limited by the links.

Also the evidence two analyses read: RDMA transfers long enough to have been retransmitted, and
the largest collective's data volume (the database export's COMMUNICATION_OP element count x data
type), which HCCL_BUFFSIZE is compared with.
"""

from __future__ import annotations

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, RankInputs, Scope
from advisor.facts.steady import steady_comm_steps
from advisor.inputs.analyzer_rules import AnalyzerRules, analyzer_rules
from advisor.parsers.profile_data import CollectiveSize, CommStep, RankProfile

SPLIT_FACTS = (
    "comm.time_split_by_kind",
    "comm.time_split_by_group",
    "comm.group_wait_ratio",
    "comm.most_waiting_group",
    "comm.rdma_retransmission_ops",
    "comm.largest_collective_mb",
)
MIB = 1024 * 1024  # HCCL_BUFFSIZE is in MB of 1024 x 1024 bytes (CANN's sizing formula)


def _shares(elapse: float, wait: float, transit: float, sync: float, n: int) -> dict[str, float]:
    # idle: the rest of the elapse, neither moving data nor waiting (the profile's Idle Time)
    return {
        "ms": round(elapse / n, 6),
        "transit": round(transit / elapse, 4),
        "wait": round(wait / elapse, 4),
        "sync": round(sync / elapse, 4),
        "idle": round(max(0.0, 1.0 - (transit + wait) / elapse), 4),
    }


def _by_kind(steps: list[CommStep], out: Recorder, source: str, note: str) -> None:
    if not any(s.transit_ms for s in steps):
        out.miss("comm.time_split_by_kind", f"{source} records no transit time per operation")
        return
    split: dict[str, dict[str, float]] = {}
    for kind in sorted({k for s in steps for k in s.elapse_ms}):
        elapse = sum(s.elapse_ms.get(kind, 0.0) for s in steps)
        if elapse <= 0:
            continue
        split[kind] = _shares(
            elapse,
            sum(s.wait_ms.get(kind, 0.0) for s in steps),
            sum(s.transit_ms.get(kind, 0.0) for s in steps),
            sum(s.sync_ms.get(kind, 0.0) for s in steps),
            len(steps),
        )
    out.add(
        "comm.time_split_by_kind",
        split,
        f"{source}:Transit Time(ms),Wait Time(ms),Synchronization Time(ms)",
        f"per op kind: ms per step and the shares of it in transit, wait, synchronization and "
        f"idle (neither transit nor wait), over {note}",
    )


def _by_group(
    rank: RankProfile,
    steps: list[CommStep],
    rules: AnalyzerRules,
    out: Recorder,
    where: tuple[str, str],
) -> None:
    source, note = where
    totals: dict[str, list[float]] = {}
    for step in steps:
        for group, times in step.group_split.items():
            into = totals.setdefault(group, [0.0, 0.0, 0.0, 0.0])
            for i, value in enumerate(times):
                into[i] += value
    if not totals or not any(t[2] > 0 for t in totals.values()):
        why = f"{source} names no group or records no transit time per operation"
        for fact_id in SPLIT_FACTS[1:4]:
            out.miss(fact_id, why)
        return
    rows: list[dict[str, object]] = []
    all_ms = sum(t[0] for t in totals.values())
    for group, (elapse, wait, transit, sync) in totals.items():
        if elapse <= 0:
            continue
        known = rank.process_groups.get(group)
        row: dict[str, object] = {"group": group, "name": known.name if known else None}
        row.update(_shares(elapse, wait, transit, sync, len(steps)))
        row["share"] = round(elapse / all_ms, 4) if all_ms > 0 else 0.0
        rows.append(row)
    rows.sort(key=lambda r: -float(str(r["ms"])))
    column = f"{source}:Wait Time(ms),Transit Time(ms)"
    out.add(
        "comm.time_split_by_group",
        rows,
        column,
        f"per communication group: ms per step, its share of communication time and the shares "
        f"in transit, wait, synchronization and idle, over {note}",
    )
    loaded = [r for r in rows if float(str(r["share"])) >= rules.group_min_share]
    if not loaded:
        why = f"no group carries {rules.group_min_share:.0%} of the communication time"
        out.miss("comm.group_wait_ratio", why)
        out.miss("comm.most_waiting_group", why)
        return
    worst = max(loaded, key=lambda r: float(str(r["wait"])))
    named = f" ({worst['name']})" if worst["name"] else ""
    described = (
        f"{worst['group']}{named}: {float(str(worst['ms'])):.2f} ms per step, "
        f"{float(str(worst['wait'])):.0%} waiting, {float(str(worst['transit'])):.0%} in transit, "
        f"{float(str(worst['idle'])):.0%} idle"
    )
    detail = (
        f"the group with the highest wait share among those carrying at least "
        f"{rules.group_min_share:.0%} of communication time, over {note}: {described}"
    )
    out.add("comm.group_wait_ratio", worst["wait"], column, detail)
    out.add("comm.most_waiting_group", described, column, detail)


def _retransmissions(
    steps: list[CommStep], rules: AnalyzerRules, out: Recorder, source: str, note: str
) -> None:
    if not any(s.link_size_mb for s in steps):
        out.miss("comm.rdma_retransmission_ops", f"{source} records no transfers per link type")
        return
    long_ops = [
        (name, ms) for s in steps for name, _, ms in s.rdma_ops if ms >= rules.retransmission_ms
    ]
    rdma = sum(len(s.rdma_ops) for s in steps)
    named = ", ".join(f"{name} {ms / 1000:.1f} s" for name, ms in long_ops[:3])
    out.add(
        "comm.rdma_retransmission_ops",
        len(long_ops),
        f"{source}:RDMA Transit Time(ms)",
        f"collective operations whose RDMA transit lasts at least {rules.retransmission_ms:g} ms, "
        f"of {rdma} with RDMA transfers, over {note}" + (f": {named}" if named else ""),
    )


def _collective_sizes(rank: RankProfile) -> tuple[list[CollectiveSize], str]:
    """Each collective's element count and data type, and where they were read: the database
    export's COMMUNICATION_OP, else the text export's trace_view.json hcom task args."""
    if rank.collective_sizes:
        return rank.collective_sizes, "COMMUNICATION_OP:count,dataType"
    from_trace = rank.trace.collective_sizes if rank.trace is not None else []
    sizes = [CollectiveSize(name, None, count, dtype) for name, count, dtype in from_trace]
    return sizes, "trace_view.json:hcom args count,data_type"


def _largest(rank: RankProfile, rules: AnalyzerRules, out: Recorder) -> None:
    sizes, source = _collective_sizes(rank)
    if not sizes:
        out.miss(
            "comm.largest_collective_mb",
            "no collective's element count and data type: the database export's "
            "COMMUNICATION_OP or trace_view.json's hcom task args (count, data_type) record "
            "them; communication.json's transit sizes are not the data volume",
        )
        return
    known = [(s, rules.dtype_bytes.get(s.dtype.upper())) for s in sizes]
    sized = [(s.count * width / MIB, s) for s, width in known if width]
    if not sized:
        types = sorted({s.dtype for s in sizes})
        out.miss("comm.largest_collective_mb", f"data types without a known size: {types}")
        return
    mb, op = max(sized, key=lambda pair: pair[0])
    out.add(
        "comm.largest_collective_mb",
        round(mb, 3),
        source,
        f"{op.name}: {op.count} x {op.dtype} = {mb:.1f} MB (1 MB = 1024 x 1024 bytes), the "
        f"largest of {len(sized)} collective(s) in the profile",
    )


def derive(given: RankInputs, out: Recorder) -> None:
    rank = given.profile
    source = given.comm_source or "communication.json"
    rules = analyzer_rules()
    if rank.platform != "ascend":
        for fact_id in SPLIT_FACTS:
            out.miss(fact_id, "a GPU trace records no wait, transit or data volume per collective")
        return
    _largest(rank, rules, out)
    if not rank.comm:
        for fact_id in SPLIT_FACTS[:-1]:
            out.miss(fact_id, f"no {source} (profile level1 or above)")
        return
    steps, note = steady_comm_steps(rank.comm, given.steady.steps.labels)
    _by_kind(steps, out, source, note)
    _by_group(rank, steps, rules, out, (source, note))
    _retransmissions(steps, rules, out, source, note)


DERIVER = Deriver[RankInputs](
    name="comm_split",
    scope=Scope.RANK,
    inputs=frozenset({"profile", "steady", "comm_source"}),
    reads=frozenset(),
    writes=frozenset(SPLIT_FACTS),
    derive=derive,
)
