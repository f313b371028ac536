"""Hostile and damaged inputs: never a traceback, never a wrong number.

Every input file the profile readers take is mutated by the families of tests/fuzz/mutations.py
(cut, empty, garbage, other encodings, BOM/CRLF, columns dropped, renamed or named twice, NaN,
infinities, huge and negative values, deep nesting, wrong types, broken events). Each case must
end with sane facts or the one-line input error, with and without --skip-bad-files. The corpus
is fixed (derandomized) under the ci profile, so CI runs the same cases every time; the nightly
profile draws new ones (tests/conftest.py):

    ADVISOR_HYPOTHESIS_PROFILE=nightly python -m pytest tests/test_fuzz.py
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.edit.launch_text import LaunchTextEditor
from advisor.model import InputError
from advisor.parsers.ascend.files import STEP_COLUMNS
from advisor.shell.launch import parse_launch
from tests.conftest import fuzz_settings
from tests.fuzz.harness import run_case
from tests.fuzz.mutations import DATABASE, KINETO, TEXT, YAML_DOC, families
from tests.synth import PRESETS, write_profile
from tests.synth.kineto_file import write_kineto

# the profile (ci or nightly, tests/conftest.py) decides the corpus; never a hang: a case
# past the profile's deadline fails
FUZZ = fuzz_settings(ci_examples=150)
ASCEND_FILES = (
    "ASCEND_PROFILER_OUTPUT/step_trace_time.csv",
    "ASCEND_PROFILER_OUTPUT/kernel_details.csv",
    "ASCEND_PROFILER_OUTPUT/op_statistic.csv",
    "ASCEND_PROFILER_OUTPUT/memory_record.csv",
    "ASCEND_PROFILER_OUTPUT/communication.json",
    "ASCEND_PROFILER_OUTPUT/communication_matrix.json",
    "ASCEND_PROFILER_OUTPUT/trace_view.json",
    "profiler_info_0.json",
    "profiler_metadata.json",
)


@pytest.fixture(scope="module")
def ascend_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    scenario = PRESETS["comm-bound"].with_(steps=4, layers=2, with_memory=True)
    return write_profile(tmp_path_factory.mktemp("ascend"), scenario).directory


@pytest.fixture(scope="module")
def kineto_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_kineto(tmp_path_factory.mktemp("kineto") / "rank0.pt.trace.json")


def _check(outcome_kind: str, detail: str, case: object) -> None:
    assert outcome_kind in ("ok", "error"), f"{outcome_kind}: {detail} ({case})"


@FUZZ
@given(
    relative=st.sampled_from(ASCEND_FILES),
    family=st.integers(0, 1000),
    seed=st.integers(0, 2**16),
    skip=st.booleans(),
)
def test_ascend_text_export_mutations(
    ascend_profile: Path, tmp_path: Path, relative: str, family: int, seed: int, skip: bool
):
    table = families(relative)
    name = sorted(table)[family % len(table)]
    work = tmp_path / f"case{seed}"
    work.mkdir(exist_ok=True)
    outcome = run_case(ascend_profile, relative, table[name], seed, work, skip_bad_files=skip)
    _check(outcome.kind, outcome.detail, (relative, name, seed, skip))


@FUZZ
@given(family=st.sampled_from(sorted(KINETO)), seed=st.integers(0, 2**16), skip=st.booleans())
def test_pytorch_trace_mutations(
    kineto_file: Path, tmp_path: Path, family: str, seed: int, skip: bool
):
    work = tmp_path / f"case{seed}"
    work.mkdir(exist_ok=True)
    outcome = run_case(kineto_file, "", KINETO[family], seed, work, skip_bad_files=skip)
    _check(outcome.kind, outcome.detail, (family, seed, skip))


@pytest.fixture(scope="module")
def database_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.synth.db_file import write_profile_db

    scenario = PRESETS["comm-bound"].with_(steps=4, layers=2, with_memory=True)
    return write_profile_db(tmp_path_factory.mktemp("db"), scenario).directory


@FUZZ
@given(
    relative=st.sampled_from(
        (
            "ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db",
            "ASCEND_PROFILER_OUTPUT/analysis.db",
        )
    ),
    family=st.sampled_from(sorted(DATABASE)),
    seed=st.integers(0, 2**16),
    skip=st.booleans(),
)
def test_database_export_mutations(
    database_profile: Path, tmp_path: Path, relative: str, family: str, seed: int, skip: bool
):
    work = tmp_path / f"case{seed}"
    work.mkdir(exist_ok=True)
    outcome = run_case(
        database_profile, relative, DATABASE[family], seed, work, skip_bad_files=skip
    )
    _check(outcome.kind, outcome.detail, (relative, family, seed, skip))


EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "examples" / "fsdp2"
LOG_TEXT = "\n".join(
    f"INFO [2026-06-22 19:28:41] >>  iteration {i:8d}/    2000 | consumed samples: {8 * i:10d} | "
    f"consumed tokens: {32768 * i:10d} | elapsed time per iteration (ms): {1800 + i:.2f} | "
    f"learning rate: 1.0E-05 | global batch size:     8 | lm loss: {2.0 - i / 100} | grad norm: 4.0 | "
    "max_memory_allocated(GB): 19.65 | max_memory_reserved(GB): 25.59 |"
    for i in range(1, 30)
).encode()


def _mutated(tmp_path: Path, name: str, data: bytes, family: dict, key: str, seed: int) -> Path:
    import random

    path = tmp_path / name
    out = family[key](data, random.Random(seed))
    path.write_bytes(out if out is not None else b"")
    return path


@FUZZ
@given(family=st.sampled_from(sorted(TEXT)), seed=st.integers(0, 2**16))
def test_training_log_mutations(tmp_path: Path, family: str, seed: int):
    from advisor.app.pipeline import log_facts
    from advisor.model import AdvisorError

    path = _mutated(tmp_path, f"train{seed}.log", LOG_TEXT, TEXT, family, seed)
    try:
        facts = log_facts([path])
    except AdvisorError as exc:
        assert "\n" not in str(exc).strip()
        return
    from tests.fuzz.harness import insane

    assert insane(facts) is None, (family, seed)


def _cli(*args: str) -> tuple[int, str]:
    """The CLI in-process: its exit code and stderr (a traceback escapes as an exception)."""
    import contextlib
    import io
    import sys

    from advisor.cli import main

    err = io.StringIO()
    old = sys.argv
    sys.argv = ["advisor", *args]
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            main()
    except SystemExit as exc:
        return int(exc.code or 0), err.getvalue()
    finally:
        sys.argv = old
    return 0, err.getvalue()


@FUZZ
@given(family=st.sampled_from(sorted(YAML_DOC)), seed=st.integers(0, 2**16))
def test_config_mutations_in_check(tmp_path: Path, family: str, seed: int):
    data = (EXAMPLES_DIR / "config.yaml").read_bytes()
    path = _mutated(tmp_path, f"config{seed}.yaml", data, YAML_DOC, family, seed)
    code, err = _cli("check", str(path))
    assert code in (0, 1, 2), (family, seed, err)
    if code == 2:
        assert len([line for line in err.splitlines() if line.strip()]) == 1, err


@FUZZ
@given(family=st.sampled_from(sorted(TEXT)), seed=st.integers(0, 2**16))
def test_launch_script_mutations_in_check(tmp_path: Path, family: str, seed: int):
    data = (EXAMPLES_DIR / "run.sh").read_bytes()
    path = _mutated(tmp_path, f"run{seed}.sh", data, TEXT, family, seed)
    code, err = _cli("check", str(EXAMPLES_DIR / "config.yaml"), "--launch", str(path))
    assert code in (0, 1, 2), (family, seed, err)
    if code == 2:
        assert len([line for line in err.splitlines() if line.strip()]) == 1, err


# string-typed and out-of-range numbers where a trace event or a step row holds a time
HOSTILE_NUMBERS = (
    "abc",
    "",
    "1.7e15x",
    "9e18",
    "-5",
    "nan",
    "inf",
    "1e400",
    "0x10",
    "1_000",
    "٣",
    " 12 ",
    -1.0,
    1e308,
    None,
    True,
    [],
    {"v": 1},
)


def _event_numbers(data: bytes, rng: random.Random) -> bytes:
    """Some events' ts or dur replaced by a hostile value (strings, floats, other types)."""
    trace = json.loads(data)
    events = trace if isinstance(trace, list) else trace["traceEvents"]
    for event in rng.sample(events, k=min(len(events), rng.randint(1, 4))):
        event[rng.choice(("ts", "dur"))] = rng.choice(HOSTILE_NUMBERS)
    return json.dumps(trace).encode()


def _step_identities(data: bytes, rng: random.Random) -> bytes:
    """A step row's columns scaled apart, so that they contradict the step model."""
    lines = data.decode().splitlines()
    header = lines[0].split(",")
    row = rng.randrange(1, len(lines))
    cells = lines[row].split(",")
    for column in rng.sample(STEP_COLUMNS, k=rng.randint(1, 3)):
        at = header.index(column)
        cells[at] = repr(float(cells[at] or 0) * rng.choice((0.0, 0.5, 3.0, 75.0)) + rng.random())
    lines[row] = ",".join(cells)
    return ("\n".join(lines) + "\n").encode()


@FUZZ
@given(seed=st.integers(0, 2**16), skip=st.booleans())
def test_string_typed_numbers_in_trace_events(
    ascend_profile: Path, tmp_path: Path, seed: int, skip: bool
):
    relative = "ASCEND_PROFILER_OUTPUT/trace_view.json"
    outcome = run_case(ascend_profile, relative, _event_numbers, seed, tmp_path, skip)
    _check(outcome.kind, outcome.detail, (seed, skip))


@FUZZ
@given(seed=st.integers(0, 2**16))
def test_step_rows_breaking_the_step_model(ascend_profile: Path, tmp_path: Path, seed: int):
    relative = "ASCEND_PROFILER_OUTPUT/step_trace_time.csv"
    outcome = run_case(ascend_profile, relative, _step_identities, seed, tmp_path)
    _check(outcome.kind, outcome.detail, seed)


# how a launch script may start its command: each form hands the command its environment
_LAUNCH_FORMS = (
    "{cmd}",
    "TASK_QUEUE_ENABLE=3 {cmd}",
    "env TASK_QUEUE_ENABLE=3 {cmd}",
    "env A=1 TASK_QUEUE_ENABLE=3 nohup {cmd}",
    'eval "{cmd}"',
    'eval "TASK_QUEUE_ENABLE=3 {cmd}"',
    "exec {cmd}",
)
_BEFORE = (
    "export TASK_QUEUE_ENABLE=3",
    'eval "export TASK_QUEUE_ENABLE=3"',
    "TASK_QUEUE_ENABLE=3",
    "unset TASK_QUEUE_ENABLE",
    "export A=1",
)


@FUZZ
@given(
    before=st.lists(st.sampled_from(_BEFORE), min_size=1, max_size=3),
    form=st.sampled_from(_LAUNCH_FORMS),
    value=st.sampled_from(("2", None)),
)
def test_launch_edits_reach_the_command_or_are_refused(
    tmp_path: Path, before: list[str], form: str, value: str | None
):
    """Whatever the prefixes, evals and exports: an environment edit either gives the launched
    command exactly the intended value (bash runs the edited script against a torchrun that
    prints it) or is refused with an input error."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash not installed")
    cmd = "torchrun --nproc_per_node 8 train_fsdp2.py config.yaml"
    text = "#!/usr/bin/env bash\n" + "\n".join(before) + "\n" + form.format(cmd=cmd) + "\n"
    script = tmp_path / "run.sh"
    script.write_text(text, encoding="utf-8")
    try:
        editor = LaunchTextEditor(parse_launch(script))
        if value is None:
            editor.remove_env("TASK_QUEUE_ENABLE")
        else:
            editor.set_env("TASK_QUEUE_ENABLE", value)
        edited = editor.results().get(script, (text, text))[1]
    except InputError:
        return
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    program = bin_dir / "torchrun"
    program.write_text('#!/bin/sh\nprintf "%s" "${TASK_QUEUE_ENABLE-<unset>}"\n', encoding="utf-8")
    program.chmod(0o755)
    script.write_text(edited, encoding="utf-8")
    done = subprocess.run(
        [bash, str(script)],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
    )
    assert done.stdout == (value if value is not None else "<unset>"), (edited, done.stdout)
