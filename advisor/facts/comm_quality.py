"""How well the collectives use the links, from communication.json: the achieved bandwidth of
each link type against the device's link peak (rules/devices.yaml), the share of transfers too
small to reach the link's bandwidth, and the share of SDMA transit time spent on transfers whose
size is not a multiple of the alignment (rules/analyzers.yaml). What the numbers are compared
with is data; the grades are the symptoms'."""

from __future__ import annotations

import re

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, RankInputs, Scope
from advisor.facts.estimate import LinkPeaks, link_peaks
from advisor.facts.steady import steady_comm_steps
from advisor.inputs.analyzer_rules import AnalyzerRules, analyzer_rules
from advisor.parsers.profile_data import CommStep

QUALITY_FACTS = (
    "comm.link_peak_ratio_by_link",
    "comm.link_peak_ratio",
    "comm.small_transfer_ratio",
    "comm.unaligned_ratio",
)
MB = 1_000_000  # communication.json's sizes are decimal megabytes


def _peaks(device: str | None) -> tuple[LinkPeaks | None, dict[str, float], str]:
    """The device's link peaks, or (when the profile does not name the device) the lowest peak
    of each link type over the Ascend devices the table lists, with the note that says which."""
    table = link_peaks()
    if device:
        for entry in table:
            if re.search(entry.match, device, re.IGNORECASE):
                return entry, entry.peaks, f"{entry.name} link peaks ({entry.source})"
        return None, {}, f"rules/devices.yaml states no link peaks for {device}"
    lowest: dict[str, float] = {}
    for entry in table:
        for link, peak in entry.peaks.items():
            lowest[link] = min(peak, lowest.get(link, peak))
    names = ", ".join(e.name for e in table)
    return (
        None,
        lowest,
        "the profile does not name the device: the lowest link peak of the devices in "
        f"rules/devices.yaml ({names}); on one of them the true share is at most this",
    )


def _peak_ratios(
    given: RankInputs, steps: list[CommStep], min_mb: float, out: Recorder, source: str, note: str
) -> None:
    size: dict[str, float] = {}
    time: dict[str, float] = {}
    for step in steps:
        for link, mb in step.link_size_mb.items():
            size[link] = size.get(link, 0.0) + mb
            time[link] = time.get(link, 0.0) + step.link_time_ms.get(link, 0.0)
    _, peaks, how = _peaks(given.profile.device)
    # SDMA is the copy engine's total of the transfers over the device's own links, not a link:
    # it has no peak of its own, and against a link's peak it would count those transfers twice
    copies = analyzer_rules().sdma_total
    ratios = {}
    for link in sorted(size):
        peak = peaks.get(link) if link != copies else None
        if peak and time[link] > 0 and size[link] / len(steps) >= min_mb:
            ratios[link] = round(size[link] / time[link] / peak, 4)
    if not ratios:
        why = how if not peaks else f"no link type with a known peak carries {min_mb:g} MB a step"
        out.miss("comm.link_peak_ratio_by_link", why)
        out.miss("comm.link_peak_ratio", why)
        return
    detail = f"achieved GB/s (transit size / transit time over {note}) / {how}"
    out.add(
        "comm.link_peak_ratio_by_link",
        ratios,
        f"{source}:Transit Size(MB),Transit Time(ms)",
        detail,
    )
    worst = min(ratios, key=lambda k: ratios[k])
    out.add("comm.link_peak_ratio", ratios[worst], f"{source}:{worst}", f"{worst}: {detail}")


def _small_transfers(
    steps: list[CommStep], rules: AnalyzerRules, out: Recorder, source: str, note: str
) -> None:
    counted = small = 0
    parts = []
    for link, limit in sorted(rules.small_transfer_mb.items()):
        if link in rules.sdma_links and any(rules.sdma_total in s.transfers for s in steps):
            continue  # the SDMA total already counts these transfers
        sizes = [mb for s in steps for mb, _ in s.transfers.get(link, [])]
        if not sizes:
            continue
        below = sum(1 for mb in sizes if mb < limit)
        counted += len(sizes)
        small += below
        parts.append(f"{link}: {below} of {len(sizes)} under {limit:g} MB")
    if counted == 0:
        out.miss("comm.small_transfer_ratio", f"{source} records no transit size per operation")
        return
    out.add(
        "comm.small_transfer_ratio",
        small / counted,
        f"{source}:Transit Size(MB)",
        f"collective operations' transfers per link type ({'; '.join(parts)}) over {note}",
    )


def _unaligned(
    steps: list[CommStep], rules: AnalyzerRules, out: Recorder, source: str, note: str
) -> None:
    links = [k for k in rules.sdma_links if any(s.packets.get(k) for s in steps)]
    if not links and any(s.packets.get(rules.sdma_total) for s in steps):
        links = [rules.sdma_total]
    total = unaligned = 0.0
    odd: dict[float, float] = {}
    step_align = rules.alignment_bytes
    for step in steps:
        for link in links:
            for size_mb, (_, time_ms) in step.packets.get(link, {}).items():
                size_bytes = round(size_mb * MB)
                if size_bytes <= step_align:
                    continue  # too small to be checked: latency, not alignment
                total += time_ms
                if size_bytes % step_align:
                    unaligned += time_ms
                    odd[size_mb] = odd.get(size_mb, 0.0) + time_ms
    if total <= 0:
        out.miss("comm.unaligned_ratio", f"{source} records no SDMA Size Distribution")
        return
    sizes = ", ".join(f"{s:g} MB" for s in sorted(odd, key=lambda s: -odd[s])[:3])
    out.add(
        "comm.unaligned_ratio",
        unaligned / total,
        f"{source}:Size Distribution",
        f"SDMA transit time ({'/'.join(links)}) in transfers whose size is not a multiple of "
        f"{step_align} bytes" + (f" (largest: {sizes})" if sizes else "") + f", over {note}",
    )


def derive(given: RankInputs, out: Recorder) -> None:
    rank = given.profile
    source = given.comm_source or "communication.json"
    if rank.platform != "ascend" or not rank.comm:
        reason = (
            "a GPU trace records no link transfers"
            if rank.platform != "ascend"
            else f"no {source} (profile level1 or above)"
        )
        for fact_id in QUALITY_FACTS:
            out.miss(fact_id, reason)
        return
    steps, note = steady_comm_steps(rank.comm, given.steady.steps.labels)
    rules = analyzer_rules()
    _peak_ratios(given, steps, given.thresholds.link_min_mb, out, source, note)
    _small_transfers(steps, rules, out, source, note)
    _unaligned(steps, rules, out, source, note)


DERIVER = Deriver[RankInputs](
    name="comm_quality",
    scope=Scope.RANK,
    inputs=frozenset({"profile", "steady", "comm_source", "thresholds"}),
    reads=frozenset(),
    writes=frozenset(QUALITY_FACTS),
    derive=derive,
)
