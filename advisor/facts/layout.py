"""The job's parallel layout from every input that states it, and the pipeline arithmetic.

What ran comes first: the profiler's record (distributed_args), then the training log's argument
dump, then the config (what the next run will use, after the launch command's overrides). Each
size says where it came from.
"""

from __future__ import annotations

from collections.abc import Mapping

from advisor.core.values import get_path
from advisor.facts.catalogue import spec_for
from advisor.facts.groups import LAYOUT_FACT
from advisor.inputs.taxonomy import Taxonomy
from advisor.model import JOB_SCOPE, Fact, FactSet, MissingFact

LOG_LAYOUT = "log.parallel_sizes"


def _sizes(facts: FactSet, fact_id: str) -> dict[str, int]:
    value = facts.value(fact_id)
    if not isinstance(value, Mapping):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, int) and not isinstance(v, bool)}


def _config_sizes(config: Mapping[str, object] | None, taxonomy: Taxonomy) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for short, keys in taxonomy.config_layout.items():
        for key in keys:
            value = get_path(config, key)
            if isinstance(value, int) and not isinstance(value, bool):
                sizes[short] = value
                break
    return sizes


def _put(facts: FactSet, fact_id: str, value: object, source: str, note: str) -> None:
    """Set a job-level fact, replacing an earlier value and its missing entry."""
    facts.facts = [f for f in facts.facts if not (f.id == fact_id and f.scope == JOB_SCOPE)]
    facts.missing = [m for m in facts.missing if not (m.id == fact_id and m.scope == JOB_SCOPE)]
    facts.facts.append(Fact(fact_id, value, spec_for(fact_id).unit, JOB_SCOPE, source, note))


def _miss(facts: FactSet, fact_id: str, reason: str) -> None:
    if facts.get(fact_id) is None and not any(
        m.id == fact_id and m.scope == JOB_SCOPE for m in facts.missing
    ):
        facts.missing.append(MissingFact(fact_id, JOB_SCOPE, reason))


def complete_layout(
    facts: FactSet,
    config: Mapping[str, object] | None,
    config_source: str,
    taxonomy: Taxonomy,
) -> None:
    """Merge the layout of profile, log and config into `job.parallel_sizes`; derive the
    tensor/context-parallel flags and the pipeline's micro-batches and expected bubble."""
    profile = facts.get(LAYOUT_FACT)
    stated = [
        (profile.source if profile else "", _sizes(facts, LAYOUT_FACT)),
        (getattr(facts.get(LOG_LAYOUT), "source", ""), _sizes(facts, LOG_LAYOUT)),
        (config_source, _config_sizes(config, taxonomy)),
    ]
    sizes: dict[str, int] = {}
    origin: dict[str, str] = {}
    for source, found in stated:
        for short, value in found.items():
            if short not in sizes:
                sizes[short], origin[short] = value, source
    if not sizes:
        _miss(facts, LAYOUT_FACT, "no input states the parallel sizes")
        return
    sources = sorted(set(origin.values()))
    note = "; ".join(
        f"{', '.join(k for k in sizes if origin[k] == src)} from {src}" for src in sources
    )
    _put(facts, LAYOUT_FACT, sizes, "+".join(sources), note)
    for short, fact_id in (("pp", "job.pipeline_parallel"), ("ep", "job.expert_parallel")):
        # the profile's traffic says it first; the stated layout fills in when it cannot (Level0)
        if short in sizes and facts.get(fact_id) is None:
            _put(facts, fact_id, sizes[short] > 1, origin[short], f"{short} = {sizes[short]}")
    for short, fact_id in (("tp", "job.tensor_parallel"), ("cp", "job.context_parallel")):
        if short in sizes:
            _put(facts, fact_id, sizes[short] > 1, origin[short], f"{short} = {sizes[short]}")
    _pipeline(facts, sizes, origin)


def _pipeline(facts: FactSet, sizes: dict[str, int], origin: dict[str, str]) -> None:
    m, m_note, m_source = _microbatches(sizes, origin)
    if m is None:
        _miss(facts, "pipeline.microbatches", m_note)
    else:
        _put(facts, "pipeline.microbatches", m, m_source, m_note)
    # stages told apart by compute count only when they differ; one "stage" of ranks that
    # exchange send/recv is a balanced pipeline of unknown depth
    stages = facts.value("pipeline.stages")
    found = stages if isinstance(stages, int) and stages > 1 else None
    if found is None and stages == 1 and facts.value("job.pipeline_parallel") is False:
        found = 1
    p = sizes.get("pp") or found
    if p is None:
        _miss(facts, "pipeline.bubble_expected_ratio", "the number of pipeline stages is unknown")
        return
    if p < 2:
        source = origin["pp"] if "pp" in sizes else "pipeline.stages"
        _put(facts, "pipeline.bubble_expected_ratio", 0.0, source, "one pipeline stage: no bubble")
        return
    if m is None:
        _miss(facts, "pipeline.bubble_expected_ratio", f"micro-batches unknown: {m_note}")
        return
    v = max(1, sizes.get("vpp") or 1)
    bubble = (p - 1) / (v * m + p - 1)
    _put(
        facts,
        "pipeline.bubble_expected_ratio",
        bubble,
        m_source,
        f"(p-1)/(v*m+p-1) with p={p}, v={v}, m={m}",
    )


def _microbatches(sizes: dict[str, int], origin: dict[str, str]) -> tuple[int | None, str, str]:
    if sizes.get("microbatches"):
        return sizes["microbatches"], "as stated", origin["microbatches"]
    gbs, mbs, dp = sizes.get("global_batch"), sizes.get("micro_batch"), sizes.get("dp")
    if gbs and mbs and dp:
        if gbs % (mbs * dp):
            return None, f"global batch {gbs} does not divide by micro batch {mbs} x dp {dp}", ""
        m = gbs // (mbs * dp)
        return m, f"global batch {gbs} / (micro batch {mbs} x dp {dp})", origin["global_batch"]
    return None, "no input states the micro-batches or the global and micro batch sizes", ""
