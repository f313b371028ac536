"""Fuzz families of the loop's own files and options: ledger tails, YAML edge cases, watch
options and log rewrites. Every case ends in a readable ledger with no record lost, or one line
naming the file (exit 2) — never an internal error, a hang or a lost record. The corpus is fixed
(derandomized) under the ci profile so CI runs the same cases; the nightly profile draws new
ones (tests/conftest.py):

    ADVISOR_HYPOTHESIS_PROFILE=nightly python -m pytest tests/test_fuzz_loop.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from advisor.app.watch import follow
from advisor.inputs.ledger import Ledger
from advisor.model import InputError
from tests.cli_run import run_cli
from tests.conftest import fuzz_settings

# the profile (ci or nightly, tests/conftest.py) decides the corpus; never a hang: a case
# past the profile's deadline fails
FUZZ = fuzz_settings(ci_examples=40)
ROOT = Path(__file__).resolve().parents[1]
RECORD = {"schema": "advisor/ledger@1", "event": "proposed", "feature": "feature.task-queue-level2"}


@FUZZ
@given(
    whole=st.integers(min_value=0, max_value=4),
    tail=st.binary(max_size=200).filter(lambda b: b"\n" not in b and b"\r" not in b),
)
def test_any_torn_tail_then_an_append_keeps_every_whole_record(
    tmp_path_factory: object, whole: int, tail: bytes
) -> None:
    folder = tmp_path_factory.mktemp("ledger")  # type: ignore[attr-defined]
    path = folder / "ledger.jsonl"
    body = b"".join((json.dumps({**RECORD, "n": i}) + "\n").encode() for i in range(whole))
    path.write_bytes(body + tail)
    try:
        ledger = Ledger.load(path)
    except InputError:
        return  # a tail that is not UTF-8 text: one line naming the file, nothing written
    ledger.append("kept", "feature.task-queue-level2")
    again = Ledger.load(path)
    numbers = [e.get("n") for e in again.entries if e["event"] == "proposed"]
    assert numbers[:whole] == list(range(whole))  # no earlier record lost
    assert again.entries[-1]["event"] == "kept"
    for line in path.read_bytes().splitlines():
        json.loads(line)  # every line is whole again


def _yaml_value() -> st.SearchStrategy[str]:
    return st.one_of(
        st.integers(min_value=4000, max_value=6000).map(lambda n: "9" * n),
        st.integers(min_value=60, max_value=400).map(lambda n: "[" * n + "]" * n),
        st.integers(min_value=60, max_value=400).map(
            lambda n: (
                "\n"
                + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(n))
                + "  " * (n + 1)
                + "v: 1"
            )
        ),
        st.sampled_from(["1e309", "-1e309", ".nan", "0x" + "f" * 64, "'" + "x" * 5000 + "'"]),
    )


@FUZZ
@given(value=_yaml_value(), ending=st.sampled_from(["\n", "\r\n", "\r"]))
def test_yaml_edge_values_in_a_config_are_one_line_or_read(
    tmp_path_factory: object, value: str, ending: str
) -> None:
    folder = tmp_path_factory.mktemp("yaml")  # type: ignore[attr-defined]
    base = (ROOT / "examples" / "fsdp2" / "config.yaml").read_text()
    config = folder / "config.yaml"
    config.write_bytes((base + f"\nextra: {value}\n").replace("\n", ending).encode())
    ran = run_cli("check", str(config))
    assert ran.exit_code in (0, 1, 2), ran.output
    assert "internal error" not in ran.output and "Traceback" not in ran.output
    if ran.exit_code == 2:
        assert "config.yaml" in ran.stderr and ran.stderr.count("\n") == 1


@FUZZ
@given(
    poll=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just(0.0)),
    idle=st.one_of(
        st.none(), st.floats(max_value=100.0), st.sampled_from([float("nan"), float("inf")])
    ),
)
def test_watch_options_never_hang_or_crash(
    tmp_path_factory: object, poll: float, idle: float | None
) -> None:
    folder = tmp_path_factory.mktemp("watch")  # type: ignore[attr-defined]
    log = folder / "train.log"
    log.write_text("iteration 1\n")
    clock = [0.0]

    def sleep(seconds: float) -> None:
        clock[0] += 1.0
        assert clock[0] < 1000, "still waiting after 1000 polls"

    try:
        timeout = 5.0 if idle is None else idle
        lines = list(follow(log, poll, timeout, sleep, lambda: clock[0]))
    except InputError as exc:
        assert "--poll" in str(exc) or "--idle-timeout" in str(exc)
        return
    assert lines == [(1, "iteration 1")]


@FUZZ
@given(
    first=st.lists(st.sampled_from(["loss 2.5", "loss 2.4", "step 3"]), min_size=1, max_size=6),
    second=st.lists(st.sampled_from(["loss nan", "loss 2.4", "step 9"]), min_size=1, max_size=6),
)
def test_a_rewritten_log_is_read_again_from_its_start(
    tmp_path_factory: object, first: list[str], second: list[str]
) -> None:
    folder = tmp_path_factory.mktemp("rewrite")  # type: ignore[attr-defined]
    log = folder / "train.log"
    log.write_text("\n".join(first) + "\n")
    state = {"rewritten": False}
    clock = [0.0]

    def sleep(_: float) -> None:
        clock[0] += 1.0
        if not state["rewritten"]:
            stat = log.stat()
            log.write_text("\n".join(second) + "\n")
            os.utime(log, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
            state["rewritten"] = True

    seen = [line for _, line in follow(log, 0.5, 3.0, sleep, lambda: clock[0])]
    if "\n".join(second) == "\n".join(first):
        assert seen == first  # the same content: nothing to read again
    else:
        assert seen[: len(first)] == first and seen[len(first) :] == second
