"""The job's parallel layout read from its process groups, where no input states the degrees.

Every parallel dimension is a family of process groups of one size that split the ranks the same
way (tensor-parallel groups [0,1],[2,3]; data-parallel groups [0,2],[1,3]). The profilers
record the groups (distributedInfo.pg_config of PyTorch traces, parallel_group_info of
torch_npu), often with the framework's name for them (Megatron core's group_desc, torch_npu's
"tp"/"dp"...). A family is named by those names (taxonomy `group_names`); an unnamed one by what
runs in it (send/recv only: pipeline; all-to-all: expert or Ulysses context parallelism) or, last,
by its place: Megatron and torchtitan build the tensor-parallel groups from consecutive ranks, so
an unnamed family of stride 1 beside another unnamed one is tensor parallelism, the other data
parallelism. Each family says how it was named, so the inference can be checked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from math import prod
from typing import Any

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, JobInputs, Scope
from advisor.facts.groups import GROUP_FACT, LAYOUT_FACT
from advisor.inputs.taxonomy import Taxonomy
from advisor.model import Fact

LAYOUT_GROUPS = "job.group_layout"
# dimensions in the order their names are tried (a name like "dp|dp_cp" is data parallelism)
DIMENSIONS = ("tp", "pp", "ep", "cp", "dp")


@dataclass
class Family:
    """Groups of one size and stride: one parallel dimension."""

    size: int
    stride: int | None  # None: members not evenly spaced
    groups: list[tuple[int, ...]] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    kinds: set[str] = field(default_factory=set)
    dim: str | None = None
    how: str = ""


def _stride(members: tuple[int, ...]) -> int | None:
    steps = {b - a for a, b in pairwise(members)}
    return steps.pop() if len(steps) == 1 else None


def _families(given: JobInputs, world: int) -> list[Family]:
    """The recorded groups (besides the whole world and single ranks) by size and stride, with
    the names they were given and the collective kinds seen in them."""
    kinds_by_key = _kinds_by_group(given)
    by_shape: dict[tuple[int, int | None], Family] = {}
    for rank in given.ranks:
        for key, group in rank.process_groups.items():
            members = tuple(sorted(group.ranks))
            if len(members) < 2 or len(members) >= world:
                continue
            shape = (len(members), _stride(members))
            family = by_shape.setdefault(shape, Family(*shape))
            if members not in family.groups:
                family.groups.append(members)
            family.names.update(_names(group.name))
            family.kinds.update(kinds_by_key.get(key, ()))
    return sorted(by_shape.values(), key=lambda f: (f.stride is None, f.stride or 0, f.size))


def _names(name: str) -> set[str]:
    """A recorded group name, split where torch_npu joins several ("embd|mp|pp")."""
    return {part.strip().lower() for part in name.split("|") if part.strip()}


def _kinds_by_group(given: JobInputs) -> dict[str, set[str]]:
    """Collective kinds seen in each group key (the ranks' comm.groups rows)."""
    out: dict[str, set[str]] = {}
    for _, rec in given.recorders:
        fact = rec.facts.get(GROUP_FACT)
        rows = fact.value if fact is not None and isinstance(fact.value, list) else []
        for row in rows:
            kinds = row.get("kinds") if isinstance(row, dict) else None
            if isinstance(kinds, dict):
                out.setdefault(str(row.get("group")), set()).update(str(k) for k in kinds)
    return out


def _name_by_recorded(families: list[Family], taxonomy: Taxonomy) -> None:
    for family in families:
        for dim in DIMENSIONS:
            matched = family.names & taxonomy.group_names.get(dim, frozenset())
            if matched:
                family.dim, family.how = dim, f"named {', '.join(sorted(matched))} by the profiler"
                break


def _name_by_traffic(families: list[Family], p2p: frozenset[str]) -> None:
    for family in families:
        if family.dim is not None or not family.kinds:
            continue
        if family.kinds <= p2p:
            family.dim, family.how = "pp", "only send/recv runs in its groups"
        elif "alltoall" in family.kinds:
            family.dim = "ep"
            family.how = "all-to-all runs in its groups (expert parallelism, or Ulysses context)"


def _name_by_place(families: list[Family]) -> None:
    """Unnamed families left: consecutive ranks are tensor parallelism beside another dimension
    (the frameworks' rank order), the rest data parallelism; more than two stay unnamed."""
    unnamed = [f for f in families if f.dim is None]
    taken = {f.dim for f in families if f.dim is not None}
    if len(unnamed) > 2:
        return
    inner = [f for f in unnamed if f.stride == 1]
    if len(unnamed) == 2 and len(inner) == 1 and "tp" not in taken:
        inner[0].dim = "tp"
        inner[0].how = "consecutive ranks (stride 1), as frameworks build tensor-parallel groups"
        unnamed.remove(inner[0])
    if len(unnamed) == 1 and "dp" not in taken:
        unnamed[0].dim = "dp"
        stride = unnamed[0].stride
        unnamed[0].how = (
            f"the remaining dimension (stride {stride}): replicas of the model"
            if stride is not None
            else "the remaining dimension: replicas of the model"
        )


def _world(given: JobInputs) -> int | None:
    for _, rec in given.recorders:
        fact = rec.facts.get("profile.world_size")
        if fact is not None and isinstance(fact.value, int):
            return fact.value
    return None


def _rows(families: Iterable[Family]) -> list[dict[str, object]]:
    return [
        {
            "dim": f.dim,
            "size": f.size,
            "stride": f.stride,
            "groups": [list(g) for g in f.groups[:4]],
            "kinds": sorted(f.kinds),
            "how": f.how or "not inferred: name it in the framework's group_desc",
        }
        for f in families
    ]


def _sizes(families: list[Family], world: int) -> tuple[dict[str, int], str] | None:
    named = {f.dim: f.size for f in families if f.dim is not None}
    if not named or any(f.dim is None for f in families):
        return None
    product = prod(named.values())
    if world % product:
        return None
    if product < world and "dp" not in named:
        named["dp"] = world // product  # the groups a rank was not in: one replica each
    listing = "; ".join(f"{f.dim} {f.size}: {f.how}" for f in families)
    return named, listing


def _stated_tp(job: Recorder) -> Fact | None:
    """The job's parallel sizes when they state a tensor-parallel size of 1."""
    sizes = job.facts.get(LAYOUT_FACT)
    if sizes is not None and isinstance(sizes.value, dict) and sizes.value.get("tp") == 1:
        return sizes
    return None


def _group_rows(job: Recorder) -> list[dict[str, Any]]:
    """The job's groups with their members, or none when a group's members are unknown."""
    groups = job.facts.get(GROUP_FACT)
    rows = groups.value if groups is not None and isinstance(groups.value, list) else []
    return rows if all(r.get("ranks") for r in rows) else []


def tp_share(families: list[Family], job: Recorder) -> None:
    """comm.tp_share where no rank could name its groups: zero without tensor parallelism, else
    the share of the job's groups whose members form a tensor-parallel group."""
    if "comm.tp_share" in job.facts:
        return
    stated = _stated_tp(job)
    if stated is not None:
        job.add(
            "comm.tp_share", 0.0, stated.source, "tensor-parallel size 1: no tensor parallelism"
        )
        return
    tp = {g for f in families if f.dim == "tp" for g in f.groups}
    rows = _group_rows(job)
    total = sum(float(r["ms_per_step"]) for r in rows)
    if not tp or total <= 0:
        return
    mine = [r for r in rows if tuple(sorted(r["ranks"])) in tp]
    job.add(
        "comm.tp_share",
        round(sum(float(r["ms_per_step"]) for r in mine) / total, 6),
        job.facts[GROUP_FACT].source,
        f"groups {', '.join(str(r['group']) for r in mine) or 'none'}: members of a "
        "tensor-parallel group (job.group_layout)",
    )


def derive(given: JobInputs, job: Recorder) -> None:
    world = _world(given)
    source = "process groups (distributedInfo.pg_config / parallel_group_info)"
    if world is None or world < 2:
        job.miss(LAYOUT_GROUPS, "the world size is unknown or 1: no parallel dimension")
        return
    families = _families(given, world)
    if not families:
        job.miss(LAYOUT_GROUPS, "the profiles record no process group smaller than the world")
        return
    _name_by_recorded(families, given.taxonomy)
    _name_by_traffic(families, given.taxonomy.p2p_kinds)
    _name_by_place(families)
    job.add(LAYOUT_GROUPS, _rows(families), source, f"world size {world}; one row per dimension")
    found = _sizes(families, world)
    if LAYOUT_FACT in job.facts or found is None:
        tp_share(families, job)
        return
    sizes, listing = found
    job.add(
        LAYOUT_FACT,
        sizes,
        source,
        f"inferred from the process groups (no input states the degrees): {listing}",
    )
    tp_share(families, job)


def _has_groups(given: JobInputs) -> bool:
    return any(rank.process_groups for rank in given.ranks)


DERIVER = Deriver[JobInputs](
    name="topology",
    scope=Scope.JOB,
    inputs=frozenset({"ranks", "recorders", "taxonomy"}),
    # the job's groups, named by their members (the groups deriver)
    reads=frozenset({GROUP_FACT}),
    writes=frozenset({LAYOUT_GROUPS, LAYOUT_FACT, "comm.tp_share"}),
    derive=derive,
    applies=_has_groups,
)
