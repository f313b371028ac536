"""Each fact deriver on its own: declarative cases (tests/cases/derivers/<name>.yaml, see
tests/deriver_cases.py), the registry's declarations, the computed order, and the import
graph of the facts package."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, get_type_hints

import networkx as nx
import pytest

from advisor.facts import registry
from advisor.facts.base import Recorder
from advisor.facts.catalogue import is_known
from advisor.facts.contract import Deriver, JobInputs, LogInputs, RankInputs, Scope
from advisor.facts.order import DeclarationError, derivation_order
from advisor.model import JOB_SCOPE
from tests.deriver_cases import CASES, inputs_of, load_cases, recorder_before

BY_NAME = {d.name: d for d in registry.DERIVERS}
CASE_IDS = [
    (path.stem, i, case["name"])
    for path in sorted(CASES.glob("*.yaml"))
    for i, case in enumerate(load_cases(path.stem))
]
INPUTS = {Scope.RANK: RankInputs, Scope.JOB: JobInputs, Scope.LOG: LogInputs}
FACTS = Path(__file__).resolve().parents[1] / "advisor" / "facts"


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return got is want
    if isinstance(want, int | float) and isinstance(got, int | float):
        return got == pytest.approx(want, rel=1e-9, abs=1e-12)
    if isinstance(want, dict) and isinstance(got, dict):
        return set(got) == set(want) and all(_same(got[k], want[k]) for k in want)
    if isinstance(want, list) and isinstance(got, list | tuple):
        return len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want, strict=True))
    return bool(got == want)


@pytest.mark.parametrize(("name", "index", "title"), CASE_IDS)
def test_deriver_case(name: str, index: int, title: str) -> None:
    deriver = BY_NAME[name]
    case = load_cases(name)[index]
    given = inputs_of(deriver.scope, case.get("inputs") or {})
    out = recorder_before(case)
    before = dict(out.facts)
    registry.run(deriver.scope, given, out, only=[name])
    written = {k: f for k, f in out.facts.items() if before.get(k) is not f}
    want = case.get("facts") or {}
    assert sorted(written) == sorted(want)
    wrong = {k: written[k].value for k in want if not _same(written[k].value, want[k])}
    assert wrong == {}, f"{title}: expected {[want[k] for k in wrong]}"
    for fact_id, source in (case.get("sources") or {}).items():
        assert written[fact_id].source == source
    for fact_id, part in (case.get("notes") or {}).items():
        assert part in written[fact_id].note
    missing = case.get("missing") or {}
    assert sorted(out.missing) == sorted(missing)
    for fact_id, part in missing.items():
        assert part in out.missing[fact_id].reason


def test_every_registered_deriver_has_cases_and_every_case_file_a_deriver() -> None:
    files = {path.stem for path in CASES.glob("*.yaml")}
    assert sorted(files - set(BY_NAME)) == []
    thin = [name for name in BY_NAME if name not in files or len(load_cases(name)) < 2]
    assert thin == [], "each deriver needs at least two cases (what it writes, what it cannot)"


def test_every_deriver_writes_somewhere_in_its_cases() -> None:
    for name in BY_NAME:
        assert any(case.get("facts") for case in load_cases(name)), name


def test_declarations_name_real_inputs_and_catalogue_facts() -> None:
    for deriver in registry.DERIVERS:
        kind = INPUTS[deriver.scope]
        names = set(get_type_hints(kind)) | {n for n in dir(kind) if not n.startswith("_")}
        assert deriver.inputs <= names, f"{deriver.name}: {sorted(deriver.inputs - names)}"
        for fact_id in deriver.writes | deriver.reads:
            assert is_known(fact_id.rstrip("*") + ("X" if fact_id.endswith("*") else "")), fact_id


def test_the_rank_step_model_runs_before_the_facts_that_read_it() -> None:
    order = [d.name for d in registry.plan(Scope.RANK)]
    assert order.index("steps") < order.index("comm")
    assert [d.name for d in registry.plan(Scope.LOG)] == ["log"]


def _toy(name: str, reads: set[str], writes: set[str]) -> Deriver[JobInputs]:
    def derive(_: JobInputs, out: Recorder) -> None:
        for fact_id in sorted(writes):
            out.add(fact_id, 1, name)

    return Deriver[JobInputs](
        name, Scope.JOB, frozenset(), frozenset(reads), frozenset(writes), derive
    )


def test_order_follows_what_reads_what_and_keeps_the_listed_order_otherwise() -> None:
    reader = _toy("reader", {"step.time_ms"}, {"comm.p2p_ratio"})
    writer = _toy("writer", set(), {"step.time_ms"})
    apart = _toy("apart", set(), {"ops.top"})
    assert derivation_order([reader, apart, writer]) == ["apart", "writer", "reader"]
    assert derivation_order([apart, writer, reader]) == ["apart", "writer", "reader"]


def test_a_waiting_deriver_runs_last_and_its_facts_keep_the_plan_s_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A deriver that may wait for another process runs after those that do not read its
    facts; the facts and missing facts come out in the plan's order all the same."""
    ran: list[str] = []

    def toy(
        name: str, reads: set[str], adds: list[str], misses: list[str], waits: bool = False
    ) -> Deriver[JobInputs]:
        def derive(_: JobInputs, out: Recorder) -> None:
            ran.append(name)
            for fact_id in adds:
                out.add(fact_id, 1, name)
            for fact_id in misses:
                out.miss(fact_id, "not recorded")

        return Deriver[JobInputs](
            name,
            Scope.JOB,
            frozenset(),
            frozenset(reads),
            frozenset(adds + misses),
            derive,
            waits=waits,
        )

    first = toy("first", set(), ["step.time_ms"], ["comm.p2p_ratio"])
    waiting = toy("waiting", set(), ["ops.top"], ["memory.reserved_peak_bytes"], waits=True)
    after = toy(
        "after", {"step.time_ms"}, ["ops.kernels_per_step"], ["memory.allocated_peak_bytes"]
    )
    monkeypatch.setattr(registry, "plan", lambda scope: (first, waiting, after))
    out = Recorder(JOB_SCOPE)
    out.add("memory.fragmentation_ratio", 1, "before the run")
    registry.run(Scope.JOB, None, out)  # type: ignore[type-var]
    assert ran == ["first", "after", "waiting"]
    assert list(out.facts) == [
        "memory.fragmentation_ratio",
        "step.time_ms",
        "ops.top",
        "ops.kernels_per_step",
    ]
    assert list(out.missing) == [
        "comm.p2p_ratio",
        "memory.reserved_peak_bytes",
        "memory.allocated_peak_bytes",
    ]
    # a later deriver reading the waiting one's facts keeps it in its place
    reader = toy("reader", {"ops.top"}, ["ops.kernels_per_step"], [])
    monkeypatch.setattr(registry, "plan", lambda scope: (first, waiting, reader))
    assert [d.name for d in registry.execution(Scope.JOB)] == ["first", "waiting", "reader"]


def test_the_phases_run_after_the_other_rank_facts() -> None:
    """A large torch_npu trace's phases are measured in another process meanwhile
    (traces/whole.py): the rank facts that do not need them are derived first."""
    assert [d.name for d in registry.execution(Scope.RANK)][-1] == "phases"


def test_a_cycle_in_the_declarations_names_the_derivers_on_it() -> None:
    one = _toy("one", {"step.time_ms"}, {"ops.top"})
    two = _toy("two", {"ops.top"}, {"step.time_ms"})
    with pytest.raises(DeclarationError, match=r"one -> two|two -> one"):
        derivation_order([one, two])


def test_a_deriver_writing_an_undeclared_fact_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    # declares one fact, writes another
    writes_ops_top = _toy("liar", set(), {"ops.top"}).derive
    liar = Deriver[JobInputs](
        "liar",
        Scope.JOB,
        frozenset(),
        frozenset(),
        frozenset({"ops.kernels_per_step"}),
        writes_ops_top,
    )
    monkeypatch.setattr(registry, "plan", lambda scope: (liar,))
    with pytest.raises(
        DeclarationError, match=re.escape("liar wrote facts it does not declare: ops.top")
    ):
        registry.run(Scope.JOB, None, Recorder(JOB_SCOPE))  # type: ignore[arg-type]


def _facts_imports(path: Path) -> set[str]:
    """The facts modules `path` imports anywhere: top level, inside functions, under
    TYPE_CHECKING."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "advisor.facts":
            for alias in node.names:
                module = FACTS / f"{alias.name}.py"
                found.add(alias.name if module.is_file() else "__init__")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("advisor.facts."):
            found.add((node.module or "").split(".")[2])
        elif isinstance(node, ast.Import):
            found.update(
                a.name.split(".")[2] for a in node.names if a.name.startswith("advisor.facts.")
            )
    return found


def test_the_facts_package_has_no_import_cycle() -> None:
    graph: nx.DiGraph[str] = nx.DiGraph()
    for path in FACTS.glob("*.py"):
        for target in _facts_imports(path):
            graph.add_edge(path.stem, target)
    assert list(nx.simple_cycles(graph)) == []


def test_a_known_order_is_read_back_without_networkx(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom advisor.facts import registry\nfrom advisor.facts.contract import Scope\n"
        "[registry.plan(s) for s in Scope]\nprint('networkx' in sys.modules)"
    )
    env = {"ADVISOR_CACHE_DIR": str(tmp_path), "PATH": ""}

    def loaded() -> str:
        return subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
        ).stdout.strip()

    assert loaded() == "True"  # the first run computes the order
    assert loaded() == "False"
