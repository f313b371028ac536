"""The convergence guard of a comparison: a faster run whose loss is worse at the same progress,
or that has new NaN iterations, is no gain. Progress is the iteration when both runs do the same
work per step, else the consumed tokens (samples)."""

from __future__ import annotations

from itertools import pairwise

from advisor.engine.compare_notes import CompareCode, CompareNote
from advisor.engine.compare_work import Unit
from advisor.model import FactSet, Value


def _curve(facts: FactSet) -> dict[int, float] | None:
    curve = facts.value("log.loss")
    if not isinstance(curve, list):
        return None
    return {int(n): float(v) for n, v in curve if v is not None}


def _matched_losses(
    lb: dict[int, float], lc: dict[int, float], work: tuple[float, float]
) -> list[tuple[float, float, float]]:
    """(consumed work, baseline loss, candidate loss) at the candidate's logged points.

    Iteration n has consumed n x the work per step (a constant batch: a ramp-up is not
    modelled); the baseline's loss there is interpolated between its two nearest logged points,
    so two batch sizes meet at the same samples or tokens seen, not the same iteration."""
    if work == (1.0, 1.0):
        return [(float(n), lb[n], lc[n]) for n in sorted(set(lb) & set(lc))]
    points = sorted((n * work[0], loss) for n, loss in lb.items())
    out = []
    for n in sorted(lc):
        at = n * work[1]
        for (x0, y0), (x1, y1) in pairwise(points):
            if x0 <= at <= x1:
                base = y0 if x1 == x0 else y0 + (y1 - y0) * (at - x0) / (x1 - x0)
                out.append((at, base, lc[n]))
                break
        else:
            if points and at == points[0][0]:
                out.append((at, points[0][1], lc[n]))
    return out


def loss_guard(
    base: FactSet, cand: FactSet, tolerance: float, unit: Unit, work: tuple[float, float]
) -> tuple[CompareNote | None, list[CompareNote]]:
    warnings: list[CompareNote] = []
    lb, lc = _curve(base), _curve(cand)
    regression = None
    if lb is not None and lc is not None:
        matched = _matched_losses(lb, lc, work)[-50:]
        if matched:
            mb = sum(b for _, b, _ in matched) / len(matched)
            mc = sum(c for _, _, c in matched) / len(matched)
            if mb > 0 and (mc - mb) / mb > tolerance:
                first, last = matched[0][0], matched[-1][0]
                values: dict[str, Value] = {
                    "first": int(first) if first.is_integer() else first,
                    "last": int(last) if last.is_integer() else last,
                    "matched_on": "iteration" if unit is Unit.step else unit.value,
                    "candidate": mc,
                    "baseline": mb,
                    "ratio": (mc - mb) / mb,
                }
                regression = CompareNote(CompareCode.loss_regression, values)
        else:
            warnings.append(CompareNote(CompareCode.no_shared_iterations))
    nan_b, nan_c = base.value("log.nan_iterations"), cand.value("log.nan_iterations")
    if isinstance(nan_c, int) and nan_c > (nan_b if isinstance(nan_b, int) else 0):
        regression = regression or CompareNote(CompareCode.nan_iterations, {"count": nan_c})
    spikes_b, spikes_c = base.value("log.grad_norm_spikes"), cand.value("log.grad_norm_spikes")
    if isinstance(spikes_c, int) and spikes_c > (spikes_b if isinstance(spikes_b, int) else 0):
        values = {"baseline": spikes_b or 0, "candidate": spikes_c}
        warnings.append(CompareNote(CompareCode.grad_norm_spikes, values))
    return regression, warnings
