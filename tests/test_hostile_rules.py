"""Rule data is data: a hostile rule file is rejected by lint and by every command that loads
it, before anything from it reaches a message, a script or a shell."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.engine.templates import render, template_errors
from advisor.model import DataError

ROOT = Path(__file__).resolve().parents[1]
FEATURE = (ROOT / "rules" / "features" / "cpu-affinity.yaml").read_text(encoding="utf-8")
SYMPTOM = (ROOT / "rules" / "symptoms" / "device-idle-high.yaml").read_text(encoding="utf-8")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args], capture_output=True, text=True, check=False
    )


def _team(tmp_path: Path, name: str, text: str) -> Path:
    folder = tmp_path / "team"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.yaml").write_text(text, encoding="utf-8")
    return folder


def _feature(path: str, target: str = "env") -> str:
    return (
        FEATURE.replace("feature.cpu-affinity", "feature.hostile")
        .replace("order: 3", "order: 97")
        .replace("after: [feature.task-queue-level2]\n", "")
        .replace("target: env", f"target: {target}")
        .replace("path: CPU_AFFINITY_CONF,", f"path: {path!r},")
        .replace("{env: CPU_AFFINITY_CONF, op: exists}", "{env: HOSTILE_X, op: exists}")
    )


@pytest.mark.parametrize(
    ("path", "target", "named"),
    [
        ("X=1; touch /tmp/PWNED; Y", "env", "an environment variable name"),
        ("A B", "env", "an environment variable name"),
        ("--x; rm -rf ~", "cli", "a command-line flag"),
        ("training.seed]; x", "config", "a dotted path of config keys"),
    ],
)
def test_change_paths_that_are_not_names_are_rejected(
    tmp_path: Path, path: str, target: str, named: str
):
    team = _team(tmp_path, "hostile", _feature(path, target))
    lint = _run("rules", "lint", str(team))
    assert lint.returncode == 2 and named in lint.stderr and "Traceback" not in lint.stderr
    work = tmp_path / "job"
    shutil.copytree(ROOT / "examples" / "fsdp2", work)
    proc = _run(
        "suggest",
        str(ROOT / "examples" / "profiles" / "host-bound"),
        str(work / "config.yaml"),
        "--launch",
        str(work / "run.sh"),
        "--rules-dir",
        str(team),
        "--write",
    )
    assert proc.returncode == 2 and named in proc.stderr
    assert (work / "run.sh").read_text() == (ROOT / "examples/fsdp2/run.sh").read_text()
    assert not Path("/tmp/PWNED").exists()


@pytest.mark.parametrize(
    ("message", "named"),
    [
        ("{value.__class__.__mro__}", "not a plain field"),
        ("{value[0]}", "only facts[...] may be indexed"),
        ("stray { brace", "template"),
        ("position {0} of the step", "not a plain field"),
        ("{secret}", "not one of"),
        ("{facts[no.such_fact]}", "no such fact"),
    ],
)
def test_message_templates_are_restricted(tmp_path: Path, message: str, named: str):
    text = SYMPTOM.replace("symptom.device-idle-high", "symptom.hostile")
    text = "\n".join(
        f'message: "{message}"' if line.startswith("message:") else line
        for line in text.splitlines()
    )
    team = _team(tmp_path, "hostile", text + "\n")
    lint = _run("rules", "lint", str(team))
    assert lint.returncode == 2 and named in lint.stderr, lint.stderr
    diagnose = _run(
        "diagnose", str(ROOT / "examples" / "profiles" / "host-bound"), "--rules-dir", str(team)
    )
    assert diagnose.returncode == 2 and "Traceback" not in diagnose.stderr
    assert "__mro__" not in diagnose.stdout and "class" not in diagnose.stdout


def test_the_formatter_refuses_what_the_check_refuses():
    assert template_errors("{value} of {facts[step.free_ratio]}", {"value", "facts"}) == []
    with pytest.raises(DataError):
        render("{value.__class__}", value=1)
    with pytest.raises(DataError):
        render("{value[0]}", value=[1])
    assert render("{value:>4}|{facts[a.b]}", value="x", facts={"a.b": "y"}) == "   x|y"


def test_a_record_fact_s_field_is_quoted_by_name():
    from advisor.engine.diagnose import FactView
    from advisor.facts.catalogue import is_known

    fields = {"value", "facts"}
    quote = "{facts[comm.slowest_link.link]} at {facts[comm.slowest_link.bandwidth_gbps]} GB/s"
    assert template_errors(quote, fields, is_known) == []
    # a field of something that is no fact is still refused
    assert template_errors("{facts[comm.no_such_fact.link]}", fields, is_known) != []
    view = FactView({"comm.slowest_link": {"link": "0-5", "bandwidth_gbps": 8.1}})
    assert render(quote, value=0.5, facts=view) == "0-5 at 8.1 GB/s"
