"""The slowest communication link: bandwidth per link against the other links of its kind.

Links of one transport type (HCCS inside a node, RDMA between nodes, PCIE...) should move data
at about the same rate (SDMA, the on-chip copy engine, and LOCAL copies are not links); one that is much slower than its peers is a slow link (a degraded cable
or port, a congested switch) and makes every collective over it wait. Links carrying little
data are latency-bound and not compared.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, JobInputs, Scope
from advisor.facts.summary import RankSummary
from advisor.inputs.analyzer_rules import analyzer_rules
from advisor.inputs.thresholds import FactThresholds
from advisor.parsers.profile_data import LinkStat, ProfileData

LINK_FACTS = ("comm.links_compared", "comm.slowest_link", "comm.slow_link_ratio")
# a median needs peers: fewer links of a transport than this are not compared
MIN_PEERS = 3


def slowest_link(
    links: list[LinkStat] | None,
    out: Recorder,
    source: str,
    thresholds: FactThresholds,
    no_matrix: str = "no communication_matrix.json (profile at level1 or above)",
) -> None:
    if not links:
        for fact_id in LINK_FACTS:
            out.miss(fact_id, no_matrix)
        return
    # SDMA (the on-chip copy engine) is not a network link: it is never compared as one
    copies = analyzer_rules().sdma_total
    loaded = [
        s
        for s in links
        if s.size_mb >= thresholds.link_min_mb and s.time_ms > 0 and s.transport != copies
    ]
    by_transport: dict[str, list[LinkStat]] = {}
    for stat in loaded:
        by_transport.setdefault(stat.transport, []).append(stat)
    worst: tuple[float, LinkStat, float] | None = None
    for stats in by_transport.values():
        if len(stats) < MIN_PEERS:
            continue
        middle = median(s.bandwidth_gbps for s in stats)
        for stat in stats:
            shortfall = 1.0 - stat.bandwidth_gbps / middle if middle > 0 else 0.0
            if worst is None or shortfall > worst[0]:
                worst = (shortfall, stat, middle)
    compared = sum(len(stats) for stats in by_transport.values() if len(stats) >= MIN_PEERS)
    out.add(
        "comm.links_compared",
        compared,
        f"{source}:Transport Type",
        f"links of a transport type with at least {MIN_PEERS} loaded links (>= "
        f"{thresholds.link_min_mb:g} MB each), of {len(links)} links in the matrix",
    )
    if worst is None:
        reason = (
            f"fewer than {MIN_PEERS} links of one transport type carry at least "
            f"{thresholds.link_min_mb:g} MB: nothing to compare a link with"
        )
        for fact_id in LINK_FACTS[1:]:
            out.miss(fact_id, reason)
        return
    shortfall, stat, middle = worst
    peers = len(by_transport[stat.transport])
    note = (
        f"link {stat.name} ({stat.transport}) moves {stat.bandwidth_gbps:.2f} GB/s against a "
        f"median of {middle:.2f} GB/s over {peers} {stat.transport} links carrying at least "
        f"{thresholds.link_min_mb:g} MB"
    )
    out.add(
        "comm.slowest_link",
        {
            "link": stat.name,
            "transport": stat.transport,
            "bandwidth_gbps": round(stat.bandwidth_gbps, 3),
            "median_gbps": round(middle, 3),
        },
        f"{source}:Transit Size(MB)/Transit Time(ms)",
        note,
    )
    out.add(
        "comm.slow_link_ratio",
        max(0.0, shortfall),
        f"{source}:Transit Size(MB)/Transit Time(ms)",
        f"1 - bandwidth / median of its transport type; {note}",
    )


def job_links(
    data: ProfileData, ranks: Sequence[RankSummary], out: Recorder, thresholds: FactThresholds
) -> None:
    """The slowest link, from the cluster's matrix or else the ranks' own matrices."""
    if data.cluster_links is not None and data.cluster_links_source is not None:
        slowest_link(data.cluster_links, out, data.cluster_links_source.name, thresholds)
        return
    merged: dict[tuple[int, int, str], LinkStat] = {}
    source = "communication_matrix.json"
    for rank in ranks:
        if rank.links is not None:
            source = rank.sources.get(source, source)
        for stat in rank.links or []:
            # a link seen from both of its ends is counted once
            merged.setdefault((stat.src, stat.dst, stat.transport), stat)
    gpu = bool(ranks) and all(
        (platform := rank.facts.get("profile.platform")) is not None and platform.value != "ascend"
        for rank in ranks
    )
    if gpu:
        no_matrix = "a GPU trace records no transfers per link between ranks"
        slowest_link(list(merged.values()), out, source, thresholds, no_matrix)
    else:
        slowest_link(list(merged.values()), out, source, thresholds)


def derive(given: JobInputs, job: Recorder) -> None:
    job_links(given.data, given.ranks, job, given.thresholds)


DERIVER = Deriver[JobInputs](
    name="links",
    scope=Scope.JOB,
    inputs=frozenset({"data", "ranks", "thresholds"}),
    reads=frozenset(),
    writes=frozenset(LINK_FACTS),
    derive=derive,
)
