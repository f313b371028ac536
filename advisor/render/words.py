"""The words of a suggestion and a diagnosis: the engine returns codes and the values that
decided them (a status and its grounds, why each candidate was not chosen, which trust check
failed, why a bottleneck leads); every renderer (text, markdown, HTML, JSON's `message` fields)
words them here, so each is said the same way everywhere and can be said better in one place."""

from __future__ import annotations

from collections.abc import Callable

from advisor.engine.diagnose import CollectBy, Collection, Unknown
from advisor.facts.catalogue import GPU_PLATFORMS
from advisor.facts.units import format_value
from advisor.model import (
    Bottleneck,
    Direction,
    Grounds,
    Lead,
    Reason,
    Recommendation,
    RejectCode,
    Rejected,
    Status,
    Suggestion,
    TrustCheck,
    TrustWarning,
    Value,
    Values,
    VerifyCheck,
)
from advisor.render.compare_words import recorded_reason
from advisor.render.retry_words import retry_reason


def _names(value: Value) -> str:
    return ", ".join(str(v) for v in value) if isinstance(value, tuple) else str(value)


def _ratio(value: Value) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


# --- why a candidate was not chosen ------------------------------------------------------------


def _below_ceiling(v: Values) -> str:
    target = f"{v['target']}[{v['target_key']}]" if v.get("target_key") else str(v["target"])
    if v.get("at_most"):
        target += f", at most {v['at_most']}"
    if v.get("limit") == "hides-under":
        return (
            f"it can recover at most {_ratio(v['ceiling_ms']):.2f} ms "
            f"({_ratio(v['ceiling_ratio']):.1%} of the step): an overlap hides at most under the "
            "compute, and there is almost none"
        )
    return (
        f"it can recover at most {_ratio(v['ceiling_ms']):.2f} ms "
        f"({_ratio(v['ceiling_ratio']):.1%} of the step): its target ({target}) is not what "
        "costs time here"
    )


_REJECTIONS: dict[RejectCode, Callable[[Values], str]] = {
    RejectCode.disabled: lambda v: "disabled in the settings file",
    RejectCode.applied: lambda v: "already applied in the current config/environment",
    RejectCode.prerequisite_false: lambda v: f"prerequisite not met: {v['requirement']}",
    RejectCode.not_indicated: lambda v: (
        f"not indicated by this profile: {v['lacks']}"
        if v.get("lacks")
        else "not indicated by this profile (its trigger condition is false)"
    ),
    RejectCode.trigger_unknown: lambda v: f"unknown whether it applies: needs {_names(v['needs'])}",
    RejectCode.rejected_before: lambda v: "tried before and rejected (ledger)",
    RejectCode.no_memory_room: lambda v: (
        f"it holds more device memory, and the run of {v['other']} ran out of memory: it waits "
        "until a change that lowers the memory peak is kept"
    ),
    RejectCode.prerequisite_unknown: lambda v: (
        f"prerequisite unknown ({v['requirement']}): needs {_names(v['needs'])}"
    ),
    RejectCode.conflicts_setting: lambda v: f"conflicts with the current settings: {v['conflict']}",
    RejectCode.conflicts_feature: lambda v: (
        f"conflicts with {v['other']}, which is applied: {v['conflict']}"
    ),
    RejectCode.after: lambda v: f"{v['other']} must come first",
    RejectCode.nothing_to_change: lambda v: "nothing left to change",
    RejectCode.below_ceiling: _below_ceiling,
    RejectCode.behind_undecided: lambda v: (
        "later in the try order than features the profile cannot decide "
        f"(they need {_names(v['needs'])})"
    ),
    RejectCode.lower_ceiling: lambda v: (
        f"can recover at most {_ratio(v['ceiling_ratio']):.1%} of the step, less than "
        f"{v['other']} ({_ratio(v['other_ratio']):.1%}): candidates are ranked by ceiling"
    ),
    RejectCode.try_order: lambda v: f"next in the try order ({v['order']}) after {v['other']}",
    RejectCode.numerics_last: lambda v: (
        f"it changes the numerics: tried after {v['other']}, which does not (the seeds try "
        "such changes last)"
    ),
}


def rejection(rejected: Rejected) -> str:
    return _REJECTIONS[rejected.code](rejected.values)


# --- trust checks ------------------------------------------------------------------------------


def _level_below_need(v: Values) -> str:
    short = v["bottlenecks"]
    count = len(short) if isinstance(short, tuple) else 1
    wanted = str(v["wanted"])
    return (
        f"the profile is {v['level']}; {_names(short)} {'rests' if count == 1 else 'rest'} on "
        f"{wanted} data (communication files, pipe metrics): profile again with "
        f"training.profile_level: {wanted.lower()}"
    )


def _single_step(v: Values) -> str:
    how = (
        "torch.profiler.schedule with active >= 3"
        if v.get("platform") in GPU_PLATFORMS
        else "profile_step_start/end"
    )
    return (
        f"one steady step: no spread to tell a change from noise; profile at least three steps "
        f"({how}) before comparing"
    )


_TRUST: dict[TrustCheck, Callable[[Values], str]] = {
    TrustCheck.level_below_need: _level_below_need,
    TrustCheck.unknown_profiler_version: lambda v: (
        f"{v['tool']} {v['version']} is {v['side']} than the versions the parser knows "
        f"({v['low']}-{v['high']}): columns may have moved or changed meaning; check the "
        "facts' sources before acting"
    ),
    TrustCheck.no_collectives: lambda v: (
        f"the job ran on {_ratio(v['world_size']):g} ranks but the profile records no "
        "communication: the communication files are incomplete or the wrong ranks were profiled"
    ),
    TrustCheck.parts_do_not_add_up: lambda v: (
        f"the step's attributed parts add up to {_ratio(v['total_ms']):.2f} ms, not "
        f"{_ratio(v['step_ms']):.2f} ms: the step model and the trace disagree"
    ),
    TrustCheck.short_step: lambda v: (
        f"the steady step is {_ratio(v['step_ms']):.3f} ms, shorter than "
        f"{_ratio(v['min_ms']):g} ms: not a training step (the profiler window cut it, or the "
        "markers wrap something else); profile whole steps"
    ),
    TrustCheck.no_steps: lambda v: (
        "the trace has no ProfilerStep#N markers: shares are over one window of arbitrary "
        "length and nothing is per step; profile with torch.profiler.schedule and call "
        "prof.step() every iteration"
    ),
    TrustCheck.single_step: _single_step,
}


def trust_message(warning: TrustWarning) -> str:
    return _TRUST[warning.id](warning.values)


# --- why a bottleneck leads, and what it is --------------------------------------------------


def lead_sentence(b: Bottleneck) -> str:
    """' Leads: why.' for the first bottleneck, '' for the others."""
    if b.lead is Lead.only:
        why = "the only bottleneck found"
    elif b.lead is Lead.costs_more and b.runner_up is not None:
        other, other_cost = b.runner_up
        theirs = (
            f"at least {other_cost:.1%}: evidence of it is not measured, so it may cost more"
            if b.runner_up_unmeasured
            else f"{other_cost:.1%}"
        )
        why = f"it costs {step_cost(b)} beyond its fine threshold, more than {other} ({theirs})"
    elif b.lead is Lead.more_severe:
        why = f"its evidence is the most severe ({b.evidence_level or b.severity}) at equal cost"
    else:
        return ""
    return f" Leads: {why}."


def step_cost(b: Bottleneck) -> str:
    """'18.9% of the step', or 'at least 18.9% ...' where evidence of it is not measured."""
    return ("at least " if b.unmeasured else "") + f"{b.cost_ratio:.1%} of the step"


def cost_share(b: Bottleneck) -> str:
    """The bottleneck's cost as the lists show it: never a bare 0.0% beside a grade."""
    if b.cost_ratio <= 0:
        return "no step time"
    share = f"{b.cost_ratio:.1%}" if b.cost_ratio >= 0.0005 else "<0.1%"
    return f">={share}" if b.unmeasured else share


def bottleneck_message(b: Bottleneck) -> str:
    """The bottleneck as its rule words it, with why it leads."""
    if b.cost_ratio > 0:
        return b.message + lead_sentence(b)
    text = (
        f"{b.title}: {b.message}. It claims no measurable step time, so it ranks after "
        "bottlenecks that do."
    )
    return text + (f" {b.notes}" if b.notes else "") + lead_sentence(b)


# --- how to collect what a rule lacks -----------------------------------------------------------


def collection_text(way: Collection) -> str:
    """How one missing value is collected, as every renderer says it."""
    if way.by is CollectBy.profile:
        return way.hint
    if way.by is CollectBy.config:
        return f"pass --config with {way.name} set"
    if way.by is CollectBy.launch:
        return f"pass --launch (or profile with torch_npu >= 2.1 to record {way.name})"
    return way.name


def how_to_collect(unknown: Unknown) -> str:
    return "; ".join(dict.fromkeys(collection_text(way) for way in unknown.collect))


# --- why the suggestion is what it is ----------------------------------------------------------


def _features_exhausted(v: Values, s: Suggestion) -> str:
    cost_ratio = _ratio(v["cost_ratio"])
    cost = f"{cost_ratio:.1%} of the step" if cost_ratio > 0 else "no measurable time"
    return (
        f"{v['bottleneck']} leads ({cost}; {v['message']}) but every documented feature for it "
        "is already applied, rejected or blocked — each candidate and why is listed below. The "
        "next step is outside the rules: profile at a deeper level or look at the operators "
        "and ranks it names."
    )


def _fixes_undecided(v: Values, s: Suggestion) -> str:
    hints = v.get("hints")
    how = f" ({'; '.join(str(h) for h in hints)})" if isinstance(hints, tuple) and hints else ""
    text = (
        f"{v['bottleneck']} leads, but which of its fixes applies depends on "
        f"{_names(v['missing'])}, which the profile lacks: collect them before changing "
        f"anything{how}"
    )
    if v.get("applied_collector"):
        text += (
            f"; the config already asks for them ({v['applied_collector']} is applied), so this "
            "profile predates the config: profile again with it"
        )
    return text


def _trust_failed(v: Values, s: Suggestion) -> str:
    failed = next((w for w in s.warnings if w.id.value == v["check"]), None)
    detail = f": {trust_message(failed)}" if failed is not None else ""
    return (
        f"{v['bottleneck']} leads, but the profile fails a check it rests on ({v['check']}){detail}"
    )


def _stale(v: Values, s: Suggestion) -> str:
    names, now, ran = v["names"], v["now"], v["ran"]
    assert isinstance(names, tuple) and isinstance(now, tuple) and isinstance(ran, tuple)
    settings = ", ".join(
        f"{name}={value or '(unset)'} (the profiled run had {before or 'it unset'})"
        for name, value, before in zip(names, now, ran, strict=True)
    )
    return (
        f"the profile predates these settings of the launch environment: {settings}. They "
        f"address the main bottleneck ({v['bottleneck']}): profile again with the current "
        "launch script before changing anything else"
    )


_GROUNDS: dict[Grounds, Callable[[Values, Suggestion], str]] = {
    Grounds.main_bottleneck: lambda v, s: f"main bottleneck: {v['bottleneck']}",
    Grounds.next_bottleneck: lambda v, s: f"next bottleneck: {v['bottleneck']}",
    Grounds.no_bottleneck: lambda v, s: (
        "No bottleneck above its threshold: keep the current settings."
    ),
    Grounds.features_exhausted: _features_exhausted,
    Grounds.evidence_missing: lambda v, s: (
        f"{v['bottleneck']} is suspected but the profile lacks {_names(v['missing'])}: "
        "collect them before changing anything"
    ),
    Grounds.fixes_undecided: _fixes_undecided,
    Grounds.trust_failed: _trust_failed,
    Grounds.undo: lambda v, s: f"undo {v['feature']}; it will not be proposed again",
    Grounds.stale_environment: _stale,
    Grounds.masking_relieved: lambda v, s: retry_reason(Reason(Grounds.masking_relieved, v)),
    Grounds.leading_changed: lambda v, s: retry_reason(Reason(Grounds.leading_changed, v)),
    Grounds.share_grown: lambda v, s: retry_reason(Reason(Grounds.share_grown, v)),
    Grounds.memory_freed: lambda v, s: retry_reason(Reason(Grounds.memory_freed, v)),
    Grounds.frees_memory: lambda v, s: (
        f"the run of {str(v['other']).removeprefix('feature.')} ran out of device memory: a "
        f"change that lowers the memory peak comes first ({v['bottleneck']})"
    ),
    Grounds.awaiting_measurement: lambda v, s: (
        f"{v['feature']} is applied but this profile was taken before it: profile again the "
        "same way (same steps, same ranks), then run advisor compare with this profile as the "
        "baseline; one change at a time"
    ),
}


def summary(s: Suggestion) -> str:
    reason: Reason = s.reason
    return _GROUNDS[reason.code](reason.values, s)


# --- the recommendation ------------------------------------------------------------------------


def head(s: Suggestion) -> str:
    return "Collect data first" if s.status is Status.needs_data else "Next change"


def title(rec: Recommendation) -> str:
    return f"Undo: {rec.title}" if rec.undo else rec.title


def why(s: Suggestion, rec: Recommendation) -> str:
    if rec.undo:
        return f"compare said revert: {revert_note(rec.revert_note)}"
    cause = bottleneck_message(rec.cause) if rec.cause is not None else summary(s)
    if s.status is Status.needs_data:
        return f"{summary(s)}. {cause}"
    if rec.retry is not None:
        return f"{cause.rstrip('.')}. {retry_reason(rec.retry)}"
    return cause


def expected(rec: Recommendation) -> str:
    if rec.undo:
        return "back to the baseline's behaviour"
    return rec.expected + (f"; memory: {rec.memory}" if rec.memory else "")


def risk(rec: Recommendation) -> str:
    return "none: restores the measured baseline" if rec.undo else rec.risk


def revert_note(note: str | None) -> str:
    return recorded_reason(note) if note else "the change did not help"


def change_line(rec: Recommendation) -> str:
    patch = rec.patch
    if patch is None:
        return f"{title(rec)} (advice: no config key to change)"
    parts = []
    for op in patch.ops:
        before = "unset" if op.expect is None else str(op.expect)
        if patch.target == "env":
            parts.append(
                f"export {op.path}={op.value}"
                if op.op == "set"
                else f"remove {op.path} (was {before})"
            )
        elif patch.target == "cli":
            parts.append(f"--{op.path} {before} -> {op.value}")
        elif op.path.startswith("args."):  # a Megatron-backend flag
            flag = "--" + op.path[len("args.") :]
            if op.op == "remove" or op.value is False:
                parts.append(f"remove {flag}")
            elif op.value is True:
                parts.append(f"add {flag}")
            else:
                parts.append(f"{flag} {before} -> {op.value}")
        else:
            parts.append(
                f"{op.path}: {before} -> {op.value}" if op.op == "set" else f"remove {op.path}"
            )
    where = patch.file or "your launch environment"
    return f"{'; '.join(parts)}   [{patch.target} in {where}, {patch.applicability}]"


_VERBS = {
    Direction.decrease: "should decrease",
    Direction.increase: "should increase",
    Direction.unchanged: "should not change",
}


def verify_line(check: VerifyCheck) -> str:
    if check.direction is Direction.back_to_baseline:
        return "step time back to the baseline's"
    now = ""
    if check.current is not None and check.unit is not None:
        now = f" (now {format_value(check.current, check.unit, compact=True)})"
    if check.direction is Direction.watch:  # no expected direction: the fact names the watch
        return f"watch {check.fact}{now}"
    return f"{check.fact} {_VERBS[check.direction]}{now}"
