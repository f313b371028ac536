"""Launch-script edits reach the command that runs: the training command's own environment
(`NAME=v` and `env NAME=v` prefixes) and the text an `eval` runs are part of the check every
environment edit passes; an edit that would not change what the launched command sees is
refused, never reported as written."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from advisor.edit.launch_text import LaunchTextEditor
from advisor.model import InputError
from advisor.shell.env import effective_env
from advisor.shell.launch import parse_launch

LAUNCH = "torchrun --nproc_per_node 8 train_fsdp2.py config.yaml\n"


def _script(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "run.sh"
    script.write_text("#!/usr/bin/env bash\n" + body, encoding="utf-8")
    return script


def _edited(script: Path, name: str, value: str | None) -> str:
    editor = LaunchTextEditor(parse_launch(script))
    if value is None:
        editor.remove_env(name)
    else:
        editor.set_env(name, value)
    return editor.results()[script][1]


def _seen_by_command(script: Path, text: str) -> dict[str, str | None]:
    def read(p: Path) -> str:
        return p.read_text(encoding="utf-8")

    return effective_env(script, text, lambda p, w: None, read).env


def _bash_sees(tmp_path: Path, text: str, name: str) -> str | None:
    """What bash gives the launcher: `torchrun` is a function printing the variable."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash not installed")
    probe = tmp_path / "probe.sh"
    shim = f'torchrun() {{ printf "%s" "${{{name}-<unset>}}"; }}\nexport -f torchrun\n'
    lines = text.split("\n", 1)
    probe.write_text(lines[0] + "\n" + shim + lines[1], encoding="utf-8")
    shim_dir = tmp_path / "bin"
    shim_dir.mkdir(exist_ok=True)
    # `env NAME=v torchrun` runs a program, not a function: a torchrun on PATH prints it too
    program = shim_dir / "torchrun"
    program.write_text(f'#!/bin/sh\nprintf "%s" "${{{name}-<unset>}}"\n', encoding="utf-8")
    program.chmod(0o755)
    done = subprocess.run(
        [bash, str(probe)],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": f"{shim_dir}:/usr/bin:/bin"},
    )
    out = done.stdout
    return None if out == "<unset>" else out


def test_an_env_prefix_is_removed_with_the_export(tmp_path: Path):
    # the repro: the export went, `env ASCEND_LAUNCH_BLOCKING=1` still set it
    script = _script(
        tmp_path, "export ASCEND_LAUNCH_BLOCKING=1\nenv ASCEND_LAUNCH_BLOCKING=1 " + LAUNCH
    )
    text = _edited(script, "ASCEND_LAUNCH_BLOCKING", None)
    assert "ASCEND_LAUNCH_BLOCKING" not in _seen_by_command(script, text)
    assert _bash_sees(tmp_path, text, "ASCEND_LAUNCH_BLOCKING") is None


def test_an_env_prefix_is_what_gets_set(tmp_path: Path):
    script = _script(tmp_path, "export TASK_QUEUE_ENABLE=3\nenv TASK_QUEUE_ENABLE=3 " + LAUNCH)
    text = _edited(script, "TASK_QUEUE_ENABLE", "2")
    assert _seen_by_command(script, text)["TASK_QUEUE_ENABLE"] == "2"
    assert _bash_sees(tmp_path, text, "TASK_QUEUE_ENABLE") == "2"


def test_the_command_prefix_set_again_is_what_gets_set(tmp_path: Path):
    script = _script(tmp_path, "export TASK_QUEUE_ENABLE=3\nTASK_QUEUE_ENABLE=3 " + LAUNCH)
    text = _edited(script, "TASK_QUEUE_ENABLE", "2")
    assert _bash_sees(tmp_path, text, "TASK_QUEUE_ENABLE") == "2"


def test_the_command_environment_counts_env_prefixes(tmp_path: Path):
    script = _script(tmp_path, "export A=1 B=2\nC=3 env A=4 nohup " + LAUNCH)
    env = _seen_by_command(script, script.read_text(encoding="utf-8"))
    assert env == {"A": "4", "B": "2", "C": "3"}


def test_a_variable_set_again_through_eval_refuses_the_edit(tmp_path: Path):
    body = 'export TASK_QUEUE_ENABLE=3\neval "export TASK_QUEUE_ENABLE=3"\n' + LAUNCH
    script = _script(tmp_path, body)
    with pytest.raises(InputError, match="instead of the intended value"):
        _edited(script, "TASK_QUEUE_ENABLE", "2")


def test_a_command_run_through_eval_is_followed(tmp_path: Path):
    body = 'export TASK_QUEUE_ENABLE=3\neval "TASK_QUEUE_ENABLE=3 ' + LAUNCH.strip() + '"\n'
    script = _script(tmp_path, body)
    assert parse_launch(script).command_line == 3
    env = _seen_by_command(script, script.read_text(encoding="utf-8"))
    assert env["TASK_QUEUE_ENABLE"] == "3"
    # the prefix inside eval's text wins: changing the export alone would not reach it
    with pytest.raises(InputError, match="instead of the intended value"):
        _edited(script, "TASK_QUEUE_ENABLE", "2")


@pytest.mark.parametrize(
    "command",
    [
        "TASK_QUEUE_ENABLE=3 " + LAUNCH,
        "env TASK_QUEUE_ENABLE=3 " + LAUNCH,
        "exec env A=1 TASK_QUEUE_ENABLE=3 " + LAUNCH,
    ],
)
def test_the_checks_read_the_commands_own_environment(tmp_path: Path, command: str):
    # the export says 2, the command line says 3: the command runs with 3
    script = _script(tmp_path, "export TASK_QUEUE_ENABLE=2\n" + command)
    launch = parse_launch(script)
    assert launch.env["TASK_QUEUE_ENABLE"] == "3"
    text = _edited(script, "TASK_QUEUE_ENABLE", "2")
    assert _bash_sees(tmp_path, text, "TASK_QUEUE_ENABLE") == "2"
