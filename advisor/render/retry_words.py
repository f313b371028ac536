"""The words of a retry: why a change reverted for no measurable effect is proposed once more
(engine/retry.py decides, with a Grounds code and the values that decided)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from advisor.model import Grounds, Reason, Value, Values


def _bottleneck(value: Value) -> str:
    return str(value).removeprefix("bottleneck.")


def _share(value: Value) -> str:
    return f"{float(value):.1%}" if isinstance(value, int | float) else "?"


def _kept(v: Values) -> str:
    kept = v.get("kept")
    names = [str(k).removeprefix("feature.") for k in kept] if isinstance(kept, tuple) else []
    return ", ".join(names) or "another change"


_RETRY: dict[Grounds, Callable[[Values], str]] = {
    Grounds.masking_relieved: lambda v: (
        f"the time it freed went to {_bottleneck(v['masked_by'])} in that run, and "
        f"{str(v['relieved_by']).removeprefix('feature.')}, kept since, addresses "
        f"{_bottleneck(v['masked_by'])}"
    ),
    Grounds.leading_changed: lambda v: (
        f"{_bottleneck(v['was'])} led then, {_bottleneck(v['now'])} leads now "
        f"(kept since: {_kept(v)})"
    ),
    Grounds.share_grown: lambda v: (
        f"the time it acts on has grown from {_share(v['was'])} to {_share(v['now'])} of the "
        f"step (kept since: {_kept(v)})"
    ),
}


def retry_reason(retry: Reason) -> str:
    """Why a change reverted for no measurable effect, or whose run ran out of memory, is
    proposed once more (never again after)."""
    if retry.code is Grounds.memory_freed:
        freed = str(retry.values.get("freed_by", "")).removeprefix("feature.")
        return (
            f"Proposed again, once: its earlier run ran out of device memory; {freed}, kept "
            "since, lowers the memory peak"
        )
    words = _RETRY.get(retry.code)
    why = words(retry.values) if words is not None else retry.code.value
    return f"Proposed again, once: its earlier run showed no measurable effect; {why}"


def masked_words(raw: object) -> str | None:
    """A revert's `masked_by` (advisor tune): where the time the change freed went."""
    if not isinstance(raw, Mapping) or not raw.get("bottleneck"):
        return None
    return (
        f"the time it freed went to {_bottleneck(raw['bottleneck'])} "
        f"({_share(raw.get('from_ratio'))} -> {_share(raw.get('to_ratio'))} of the step)"
    )
