"""advisor report: a self-contained HTML page, rendered in headless Chromium and looked at."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from collections import Counter
from html import escape
from html.parser import HTMLParser
from pathlib import Path

import pytest

from advisor.app.pipeline import profile_facts
from tests.cli_run import run_cli
from tests.conftest import REAL
from tests.synth.kineto_file import write_kineto

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
CONFIG = EXAMPLES / "fsdp2" / "config.yaml"
LAUNCH = EXAMPLES / "fsdp2" / "run.sh"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# the flags that keep headless Chromium off the network and quiet on a machine without a bus
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
)


class _Tags(HTMLParser):
    """Tags left open or closed without opening (void elements excepted)."""

    VOID = frozenset({"meta", "br", "hr", "img", "input", "link", "line", "rect", "path", "circle"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        pass

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()


def _well_formed(page: str) -> None:
    parser = _Tags()
    parser.feed(page)
    assert not parser.errors, parser.errors[:5]
    assert parser.stack == [], parser.stack


def _self_contained(page: str) -> None:
    # nothing the page loads comes from elsewhere: no src/href to a scheme, no @import, no url()
    assert not re.search(r'(src|href)\s*=\s*"(https?:|//)', page)
    assert "<link" not in page and "@import" not in page and "url(" not in page


def _report(tmp_path: Path, *args: str) -> str:
    out = tmp_path / "report.html"
    result = run_cli("report", *args, "-o", str(out))
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    _well_formed(page)
    _self_contained(page)
    return page


def test_single_rank_report_has_every_section(tmp_path):
    page = _report(
        tmp_path, str(EXAMPLES / "profiles" / "comm-bound"), str(CONFIG), "--launch", str(LAUNCH)
    )
    for anchor in ("steps", "bottlenecks", "ops", "change"):
        assert f'<section id="{anchor}">' in page
    assert "Main bottleneck: communication" in page
    assert "exposed allgather" in page  # exposed communication split by kind in the step bars
    assert 'class="add"' in page and "num_to_forward_prefetch: 2" in page  # the diff
    assert 'id="ranks"' not in page  # one rank: no rank table
    assert "Other candidates" in page


def test_report_writes_nothing_but_the_page(tmp_path):
    work = tmp_path / "job"
    shutil.copytree(EXAMPLES / "fsdp2", work)
    before = {p: p.read_bytes() for p in work.rglob("*") if p.is_file()}
    _report(tmp_path, str(EXAMPLES / "profiles" / "comm-bound"), str(work / "config.yaml"))
    after = {p: p.read_bytes() for p in work.rglob("*") if p.is_file()}
    assert after == before  # no ledger, no edit
    assert not (work / ".advisor").exists()


def test_report_refuses_to_overwrite_a_file_that_is_not_a_report(tmp_path):
    mine = tmp_path / "notes.html"
    mine.write_text("<html><title>my notes</title></html>", encoding="utf-8")
    result = run_cli("report", str(EXAMPLES / "profiles" / "healthy"), "-o", str(mine))
    assert result.exit_code == 2
    assert "not an advisor report" in result.output
    assert mine.read_text(encoding="utf-8") == "<html><title>my notes</title></html>"
    earlier = tmp_path / "report.html"
    assert (
        run_cli("report", str(EXAMPLES / "profiles" / "healthy"), "-o", str(earlier)).exit_code == 0
    )
    again = run_cli("report", str(EXAMPLES / "profiles" / "comm-bound"), "-o", str(earlier))
    assert again.exit_code == 0  # an earlier report is replaced
    assert "communication" in earlier.read_text(encoding="utf-8")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".advisor-report")] == []


def test_report_to_standard_output(tmp_path):
    result = run_cli("report", str(EXAMPLES / "profiles" / "healthy"))
    assert result.exit_code == 0
    assert result.stdout.startswith("<!DOCTYPE html>")


def test_cluster_report_marks_the_slow_rank(tmp_path):
    page = _report(tmp_path, str(EXAMPLES / "profiles" / "slow-rank"))
    facts = profile_facts(EXAMPLES / "profiles" / "slow-rank")
    slowest = facts.value("ranks.slowest")
    assert re.search(rf'<tr class="slow"><td data-v="{slowest}">{slowest} <span', page)
    assert 'class="sortable heat"' in page


def _busy_by_rank(page: str) -> dict[str, float]:
    """The busy column of the rank table (the third cell of each row)."""
    rows = re.findall(r'<tr(?: class="slow")?><td data-v="(\d+)">.*?</tr>', page)
    busy = {}
    for rank in rows:
        row = re.search(rf'<td data-v="{rank}">.*?</tr>', page)
        assert row is not None
        cells = re.findall(r'<td class="num" data-v="([0-9.e+-]+)"', row.group(0))
        busy[rank] = float(cells[1])
    return busy


def test_the_straggler_badge_sits_on_the_busiest_rank_it_is_shown_with(tmp_path):
    page = _report(tmp_path, str(EXAMPLES / "profiles" / "slow-rank"))
    assert "<th>busy (step - exposed comm)</th>" in page
    busy = _busy_by_rank(page)
    badged = re.findall(r'<td data-v="(\d+)">\d+ <span class="pill error"[^>]*>straggler', page)
    assert badged == [max(busy, key=busy.__getitem__)]


@pytest.mark.skipif(not (REAL / "ascend-ddp-2rank-text").is_dir(), reason="needs ../shared/real")
def test_no_straggler_badge_within_normal_jitter(tmp_path):
    # rank 1 is 3% busier than rank 0 and finishes its step 2 ms sooner: nobody's straggler
    page = _report(tmp_path, str(REAL / "ascend-ddp-2rank-text"))
    assert "straggler" not in page and "slowest" not in page
    assert len(_busy_by_rank(page)) == 2


def test_comparison_and_ledger_history(tmp_path):
    work = tmp_path / "job"
    shutil.copytree(EXAMPLES / "fsdp2", work)
    ledger = work / ".advisor" / "ledger.jsonl"
    written = run_cli(
        "suggest", str(EXAMPLES / "profiles" / "comm-bound"), str(work / "config.yaml"), "--write"
    )
    assert written.exit_code == 0, written.output
    page = _report(
        tmp_path,
        str(EXAMPLES / "profiles" / "healthy"),
        str(work / "config.yaml"),
        "--baseline",
        str(EXAMPLES / "profiles" / "comm-bound"),
        "--ledger",
        str(ledger),
    )
    assert '<section id="compare">' in page and "Verdict: KEEP" in page
    assert '<section id="ledger">' in page and "feature.fsdp-forward-prefetch" in page
    lines = ledger.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["event"] for line in lines] == ["proposed"]  # read, never added to


def test_per_step_parts_add_up_to_the_step():
    facts = profile_facts(EXAMPLES / "profiles" / "host-bound")
    steps = facts.value("attrib.by_step_ms")
    assert steps and len(steps) == facts.value("step.steady_steps")
    for row in steps:
        assert sum(row["parts"].values()) == pytest.approx(row["total"], abs=0.01)
    assert any(name.startswith("idle_") for row in steps for name in row["parts"])


def test_missing_ledger_and_bad_profile_are_one_line(tmp_path):
    result = run_cli(
        "report", str(EXAMPLES / "profiles" / "healthy"), "--ledger", str(tmp_path / "nope.jsonl")
    )
    assert result.exit_code == 2 and "no such ledger file" in result.output
    result = run_cli("report", str(tmp_path / "missing"))
    assert result.exit_code == 2 and "no such file or directory" in result.output


# --- rendered in a real browser --------------------------------------------------------------


def _render(page: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's chromium package)")
    shot = tmp_path / f"{page.stem}.png"
    proc = subprocess.run(
        [
            CHROMIUM,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={tmp_path / 'chromium-profile'}",
            "--window-size=1100,1800",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    return shot, console


def _looks_drawn(shot: Path) -> None:
    image_module = pytest.importorskip("PIL.Image", reason="Pillow is in the dev extra")
    image = image_module.open(shot).convert("RGB")
    width, height = image.size
    assert (width, height) == (1100, 1800)
    small = image.resize((width // 4, height // 4))
    raw = small.tobytes()
    pixels = [tuple(raw[i : i + 3]) for i in range(0, len(raw), 3)]
    background = Counter(pixels).most_common(1)[0][0]
    drawn = sum(
        1 for p in pixels if sum(abs(a - b) for a, b in zip(p, background, strict=True)) > 60
    )
    assert drawn / len(pixels) > 0.05, f"only {drawn / len(pixels):.1%} of the page is drawn"
    # the charts' colours are on screen: compute blue and at least one more part colour
    colours = {p for p in pixels if max(p) - min(p) > 60}
    assert len(colours) > 20, f"{len(colours)} saturated colours: charts missing"
    blue = [p for p in colours if p[2] > p[0] + 40 and p[2] > 120]
    assert blue, "no chart colour on the page"


def _render_and_check(page_path: Path, tmp_path: Path) -> None:
    shot, console = _render(page_path, tmp_path)
    assert console == [], console
    _looks_drawn(shot)


def test_console_check_catches_a_broken_page(tmp_path):
    """The browser check can fail: a page with a script error is reported."""
    broken = tmp_path / "broken.html"
    broken.write_text("<html><body><p>x</p><script>missingFunction();</script></body></html>")
    _, console = _render(broken, tmp_path)
    assert any("missingFunction" in line for line in console)
    blank = tmp_path / "blank.html"
    blank.write_text("<html><body></body></html>")
    shot, _ = _render(blank, tmp_path)
    with pytest.raises(AssertionError):
        _looks_drawn(shot)


def test_single_rank_report_renders(tmp_path):
    out = tmp_path / "single.html"
    args = [str(EXAMPLES / "profiles" / "comm-bound"), str(CONFIG), "--launch", str(LAUNCH)]
    assert run_cli("report", *args, "-o", str(out)).exit_code == 0
    _render_and_check(out, tmp_path)


def test_cluster_report_renders(tmp_path):
    out = tmp_path / "cluster.html"
    profile = REAL / "ascend-qwen3-pp2-4rank"
    if not profile.is_dir():
        profile = EXAMPLES / "profiles" / "slow-rank"  # ../shared absent: the bundled cluster
    assert run_cli("report", str(profile), "-o", str(out)).exit_code == 0
    page = out.read_text(encoding="utf-8")
    assert 'id="ranks"' in page
    _render_and_check(out, tmp_path)


def test_gpu_report_renders(tmp_path):
    trace = REAL / "kineto-rocm"
    if not trace.is_dir():
        trace = write_kineto(tmp_path / "rank0.pt.trace.json", steps=6)
    out = tmp_path / "gpu.html"
    assert run_cli("report", str(trace), "-o", str(out)).exit_code == 0
    assert "on cuda" in out.read_text() or "on rocm" in out.read_text()
    _render_and_check(out, tmp_path)


def test_bundled_example_report_is_current(tmp_path):
    """examples/report.html is what the README's example produces today."""
    committed = EXAMPLES / "report.html"
    out = tmp_path / "report.html"
    args = [str(EXAMPLES / "profiles" / "comm-bound"), str(CONFIG), "--launch", str(LAUNCH)]
    assert run_cli("report", *args, "-o", str(out)).exit_code == 0
    normal = out.read_text(encoding="utf-8").replace(str(ROOT) + "/", "")
    assert committed.read_text(encoding="utf-8") == normal, (
        "examples/report.html is stale: regenerate it from the repository root with "
        "advisor report examples/profiles/comm-bound examples/fsdp2/config.yaml "
        "--launch examples/fsdp2/run.sh -o examples/report.html"
    )


def test_large_cluster_gets_a_heat_map_and_the_outliers():
    from advisor.engine.diagnose import Diagnosis, Symptom
    from advisor.model import Fact, FactSet, rank_scope
    from advisor.render.report_html import report_html

    facts = FactSet()
    facts.facts.append(Fact("ranks.slowest", 97, "", "job", "x", ""))
    for rank in range(200):
        ms = 100.0 + (30.0 if rank == 97 else rank % 3)
        facts.facts.append(Fact("step.time_ms", ms, "ms", rank_scope(rank), "x", ""))

    from advisor.app.report import ReportData

    slow = Symptom(
        "symptom.slow-rank", "error", "ranks.busy_spread_ratio", 0.3, 0.2, 0.05, 0.25, ""
    )
    page = report_html(ReportData("big", facts, Diagnosis(symptoms=[slow])))
    _well_formed(page)
    assert page.count("<rect") >= 200  # one square per rank
    assert 'stroke="#000"' in page  # the slowest rank outlined
    rows = re.findall(r'<tr(?: class="slow")?><td data-v="(\d+)"', page)
    assert len(rows) == 32 and "97" in rows  # the ranks furthest from the median, 97 first of all


def _header(page: str) -> str:
    match = re.search(r"<header>.*?</header>", page, re.S)
    assert match is not None
    return match.group(0)


def test_the_headline_follows_a_revert_verdict(tmp_path):
    page = _report(
        tmp_path,
        str(EXAMPLES / "profiles" / "host-bound"),
        str(CONFIG),
        "--baseline",
        str(EXAMPLES / "profiles" / "healthy"),
    )
    header = _header(page)
    assert 'class="headline revert">Against the baseline: REVERT' in header
    assert "Next change:" not in header  # the next change waits for the revert
    assert "revert the change this run tried" in header


def test_a_run_judged_revert_is_not_greeted_as_healthy():
    from advisor.app.report import ReportData
    from advisor.engine.compare import compare
    from advisor.engine.diagnose import Diagnosis
    from advisor.inputs.taxonomy import default_taxonomy
    from advisor.render.report_html import report_html

    slower = profile_facts(EXAMPLES / "profiles" / "host-bound")
    comparison = compare(
        profile_facts(EXAMPLES / "profiles" / "healthy"), slower, default_taxonomy()
    )
    assert comparison.verdict.value == "revert"
    header = _header(report_html(ReportData("x", slower, Diagnosis(), comparison=comparison)))
    assert "looks healthy" not in header and 'class="headline ok"' not in header
    assert "REVERT" in header


def test_symptom_measures_are_shown_in_their_units(tmp_path):
    page = _report(tmp_path, str(EXAMPLES / "profiles" / "comm-bound"))
    row = re.search(r"<code>exposed-communication-high</code></td>(.*?)</tr>", page, re.S)
    assert row is not None
    measured, threshold = re.findall(r'<td class="num"[^>]*>([^<]*)</td>', row.group(1))
    assert measured.endswith("%") and threshold == "20.0%"


def test_advice_without_a_key_is_named_once_in_the_change_section(tmp_path):
    from advisor.app.report import ReportData
    from advisor.render.report_html import report_html
    from tests.test_suggest import make_job, suggest

    run = suggest(*make_job(tmp_path, "unfused-attention", model_id=""))
    rec = run.suggestion.recommendation
    assert rec is not None and rec.patch is None
    page = report_html(ReportData("x", run.facts, run.diagnosis, run.suggestion, run.notes))
    change = re.search(r'<section id="change">.*?</section>', page, re.S)
    assert change is not None
    assert change.group(0).count(escape(rec.title)) == 1
    assert "advice: no config key to change" in change.group(0)


def test_operators_without_pipe_data_carry_no_unknown_label(tmp_path):
    trace = tmp_path / "rank0.pt.trace.json"
    write_kineto(trace)
    page = _report(tmp_path, str(trace))
    ops = re.search(r'<section id="ops">.*?</section>', page, re.S)
    assert ops is not None and "ms/step" in ops.group(0)
    assert "[unknown]" not in ops.group(0) and " 1 calls" not in ops.group(0)


def test_a_ceiling_leaves_out_the_time_another_bottleneck_claims():
    # the pipeline's receive wait sits inside exposed communication: the communication
    # bottleneck's ceiling is what is left, so no millisecond is a ceiling twice
    from advisor.app.diagnose import run_diagnose
    from advisor.app.job import JobOptions
    from advisor.render.html_bottlenecks import bottleneck_table

    run = run_diagnose(JobOptions(profile=EXAMPLES / "profiles" / "pipeline-bubble"))
    facts, diagnosis = run.facts, run.diagnosis
    [exposed] = [s for s in diagnosis.symptoms if s.id == "symptom.exposed-communication-high"]
    wait = facts.value("step.pipeline_wait_ratio") + (
        facts.value("ranks.wait_for_slowest_ratio") or 0.0
    )
    assert wait > 0.05
    assert exposed.claimed_ratio == pytest.approx(exposed.value - wait)
    step = facts.value("step.time_ms")
    table = bottleneck_table(diagnosis, step)
    assert f"{exposed.value * step:.2f} ms" not in table
    # a symptom that costs time shows the part it claims as its ceiling
    costing = dataclasses.replace(exposed, cost_ratio=0.01)
    diagnosis.symptoms[diagnosis.symptoms.index(exposed)] = costing
    assert f"{(exposed.value - wait) * step:.2f} ms" in bottleneck_table(diagnosis, step)
