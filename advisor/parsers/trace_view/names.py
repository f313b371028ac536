"""What the trace_view.json reader does with an event, decided once per name.

Millions of events carry a few hundred names (host operators, AscendCL calls, kernels), and most
ask for nothing: the reader looks a name up instead of testing it again. Bounded, as Python
ranges' names carry object addresses: past HOST_KINDS_MAX names are tested each time.
"""

from __future__ import annotations

from advisor.inputs.taxonomy import Taxonomy
from advisor.parsers.traces.phases import HOST_KINDS_MAX, NEITHER, RangeReader

NOTHING_SEEN: dict[str, bool] = {}  # a category none of whose names was looked at yet

# what an event without a category is, by its name (EventNames.uncategorised)
PLAIN_KERNEL = 0  # a device event neither a step marker, an overlap lane nor a collective
CALL_KEPT = 1  # an AscendCL call the reader keeps (a synchronisation, allocation, free...)
CALL_DROPPED = 2  # any other AscendCL call (a launch)


class EventNames:
    """Whether a host event (by category and name) or an AscendCL call (by name) is read,
    and which device events are plain kernels."""

    def __init__(self, taxonomy: Taxonomy) -> None:
        self.taxonomy = taxonomy
        self.host: dict[str, dict[str, bool]] = {}
        # the events without a category, AscendCL calls and kernels alike: one lookup each
        self.uncategorised: dict[str, int] = {}
        self._ranges = RangeReader(taxonomy.phase_ranges, taxonomy.gc_ranges, taxonomy.fsdp_ranges)

    def learn_host(self, cat: str, name: str) -> bool:
        kept = self._host_kept(cat, name)
        by_name = self.host.setdefault(cat, {})
        if len(by_name) < HOST_KINDS_MAX:
            by_name[name] = kept
        return kept

    def learn_runtime(self, name: str) -> bool:
        kept = self._runtime_kept(name)
        if len(self.uncategorised) < HOST_KINDS_MAX:
            self.uncategorised[name] = CALL_KEPT if kept else CALL_DROPPED
        return kept

    def learn_plain(self, name: str) -> None:
        if len(self.uncategorised) < HOST_KINDS_MAX:
            self.uncategorised[name] = PLAIN_KERNEL

    def _host_kept(self, cat: str, name: str) -> bool:
        """Whether the accumulator's _host_side does anything with such an event (keeps it,
        or reads its times: a bad time is refused wherever one is read); its tests, in order."""
        tax = self.taxonomy
        if name.startswith("ProfilerStep#"):
            return tax.step.fullmatch(name) is not None
        if "DataLoader" in name or "dataset" in name:
            return tax.dataloader.fullmatch(name) is not None
        if "item" in name or "_scalar" in name or cat == "user_annotation":
            return True
        if (
            cat == "cpu_op"
            and ("#" in name or " " in name or "." in name)
            and tax.user_ranges.fullmatch(name)
        ):
            return True
        return self._ranges.kind(name) != NEITHER

    def _runtime_kept(self, name: str) -> bool:
        """Whether the accumulator's _runtime_call keeps an AscendCL call of this name."""
        tax = self.taxonomy
        return bool(
            ("Synchron" in name and tax.sync_calls.fullmatch(name))
            or ("Memcpy" in name and tax.blocking_calls.fullmatch(name))
            or ("Malloc" in name and tax.malloc_calls.fullmatch(name))
            or ("Free" in name and tax.free_calls.fullmatch(name))
        )
