"""The AI Core frequency the device ran at (the database export's AICORE_FREQ samples): the
lowest sample against the highest, so a drop during the profile (power or thermal limits) is
seen; a device held at a low frequency the whole time shows no drop and is not caught here."""

from __future__ import annotations

from advisor.facts.base import Recorder
from advisor.facts.contract import Deriver, RankInputs, Scope

FREQ_FACTS = ("ops.aicore_freq_min_ratio",)


def derive(given: RankInputs, out: Recorder) -> None:
    freqs = given.profile.aicore_freq_mhz
    if given.profile.platform != "ascend":
        out.miss("ops.aicore_freq_min_ratio", "a GPU trace records no AI Core frequency")
        return
    if not freqs:
        out.miss(
            "ops.aicore_freq_min_ratio",
            "no AI Core frequency samples (the database export's AICORE_FREQ; the text export "
            "has none)",
        )
        return
    low, high = min(freqs), max(freqs)
    out.add(
        "ops.aicore_freq_min_ratio",
        low / high,
        "AICORE_FREQ:freq",
        f"lowest {low:g} MHz against highest {high:g} MHz over {len(freqs)} sample(s)",
    )


DERIVER = Deriver[RankInputs](
    name="frequency",
    scope=Scope.RANK,
    inputs=frozenset({"profile"}),
    reads=frozenset(),
    writes=frozenset(FREQ_FACTS),
    derive=derive,
)
