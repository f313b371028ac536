"""Deriver cases: a deriver's inputs written as data, run alone, and the facts it must write.

One file per registered deriver, tests/cases/derivers/<name>.yaml, a list of cases:

    - name: what the case shows
      inputs: {...}          # the scope's inputs (below), plain data
      before: {fact: value}  # facts already recorded in the scope: what the declared reads find
      facts: {fact: value}   # every fact the deriver writes, exactly (numbers to 1e-9)
      sources: {fact: text}  # optional: the source a fact cites
      notes: {fact: text}    # optional: a part of the note
      missing: {fact: text}  # every fact it calls missing, with a part of the reason

Inputs by scope. rank: `profile` (RankProfile fields), `comm_source`. job: `ranks` (label ->
that rank's facts), `summaries` (RankSummary fields of the rank directories read; a summary's
facts are its label's), `data` (ProfileData fields), `stages` ([groups, stated]), `several`,
`source`, `traffic_read`, `coverage`. log: `log` (TrainLog fields). The taxonomy is always the
built-in one. Dataclasses are built from their type hints, so a case names fields, not classes.
"""

from __future__ import annotations

import dataclasses
import types
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

from advisor.core.yamlio import load_data
from advisor.facts.base import Recorder
from advisor.facts.catalogue import spec_for
from advisor.facts.contract import JobInputs, LogInputs, RankInputs, Scope
from advisor.facts.summary import RankSummary
from advisor.inputs.taxonomy import default_taxonomy
from advisor.model import JOB_SCOPE, Fact

CASES = Path(__file__).resolve().parent / "cases" / "derivers"
CASE_KEYS = {"name", "inputs", "before", "facts", "sources", "notes", "missing"}


def build(hint: Any, value: Any) -> Any:
    """`value` (plain data) as the type `hint` names: dataclasses, lists, dicts, tuples,
    optionals and paths, recursively."""
    origin = get_origin(hint)
    if value is None:
        return None
    if isinstance(hint, type) and hasattr(hint, "__get__") and hasattr(hint, "__set__"):
        # a descriptor field is given as the value it reads as
        return build(get_type_hints(hint.__get__)["return"], value)
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(hint) if a is not type(None)]
        return build(options[0], value) if len(options) == 1 else value
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        hints = get_type_hints(hint)
        unknown = set(value) - set(hints)
        assert not unknown, f"{hint.__name__} has no field {sorted(unknown)}"
        return hint(**{k: build(hints[k], v) for k, v in value.items()})
    if origin is list:
        return [build(get_args(hint)[0], v) for v in value]
    if origin is dict:
        key, item = get_args(hint)
        return {build(key, k): build(item, v) for k, v in value.items()}
    if origin is tuple:
        return tuple(build(get_args(hint)[0], v) for v in value)
    if hint is Path:
        return Path(value)
    if hint is float and isinstance(value, int):
        return float(value)
    return value


def _facts(values: dict[str, Any], scope: str) -> dict[str, Fact]:
    return {
        fact_id: Fact(fact_id, value, spec_for(fact_id).unit, scope, "case", "")
        for fact_id, value in values.items()
    }


def _job_inputs(raw: dict[str, Any]) -> JobInputs:
    ranks = {str(label): _facts(facts, JOB_SCOPE) for label, facts in raw.get("ranks", {}).items()}
    recorders = [(label, Recorder(JOB_SCOPE, facts)) for label, facts in ranks.items()]
    summaries = []
    for entry in raw.get("summaries", []):
        fields = {"path": "rank", "rank": None, **entry}
        summary: RankSummary = build(RankSummary, {**fields, "facts": {}, "missing": {}})
        label = str(summary.rank) if summary.rank is not None else "#0"
        summary.facts = ranks.get(label, {})
        summaries.append(summary)
    hints = get_type_hints(JobInputs)
    groups, stated = raw.get("stages", [None, None])
    return JobInputs(
        data=build(hints["data"], {"root": "job", **raw.get("data", {})}),
        ranks=summaries,
        recorders=recorders,
        taxonomy=default_taxonomy(),
        several=raw.get("several", len(recorders) > 1),
        source=raw.get("source", "rank directories"),
        stages=(groups, stated),
        traffic_read=raw.get("traffic_read", True),
        coverage=raw.get("coverage", ""),
    )


def inputs_of(scope: Scope, raw: dict[str, Any]) -> RankInputs | JobInputs | LogInputs:
    """The scope's inputs from a case's `inputs`."""
    if scope is Scope.RANK:
        hints = get_type_hints(RankInputs)
        profile = {"path": "rank", "output_dir": None, "framework": "torch_npu"}
        profile.update(raw.get("profile", {}))
        return RankInputs(
            build(hints["profile"], profile), default_taxonomy(), raw.get("comm_source")
        )
    if scope is Scope.LOG:
        log = {"paths": ["train.log"], "lines_read": 0, **raw.get("log", {})}
        return LogInputs(build(get_type_hints(LogInputs)["log"], log), default_taxonomy())
    return _job_inputs(raw)


def load_cases(name: str) -> list[dict[str, Any]]:
    cases = load_data(CASES / f"{name}.yaml")
    assert isinstance(cases, list) and cases, f"{name}.yaml: a list of cases"
    for case in cases:
        assert set(case) <= CASE_KEYS, f"{name}.yaml: {case.get('name')}: {set(case) - CASE_KEYS}"
    return cases


def recorder_before(case: dict[str, Any]) -> Recorder:
    return Recorder(JOB_SCOPE, _facts(case.get("before") or {}, JOB_SCOPE))
