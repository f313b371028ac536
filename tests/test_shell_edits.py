"""Launch-script edits replace whole shell words, keep their quoting, never edit a computed
value, and are refused when bash would not parse the result."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from advisor.edit.launch_text import LaunchTextEditor
from advisor.model import InputError
from advisor.shell.launch import parse_launch
from advisor.shell.words import value_of, word_end

COMMAND = "torchrun --nproc_per_node 8 train_fsdp2.py config.yaml\n"


def _edit(tmp_path: Path, body: str, name: str = "TASK_QUEUE_ENABLE", value: str = "2") -> str:
    script = tmp_path / "run.sh"
    script.write_text("#!/usr/bin/env bash\n" + body + COMMAND, encoding="utf-8")
    editor = LaunchTextEditor(parse_launch(script))
    editor.set_env(name, value)
    return editor.results()[script][1]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("export TASK_QUEUE_ENABLE=1\n", "export TASK_QUEUE_ENABLE=2\n"),
        ('export TASK_QUEUE_ENABLE="1 "\n', 'export TASK_QUEUE_ENABLE="2"\n'),
        ("export TASK_QUEUE_ENABLE='1'  # level\n", "export TASK_QUEUE_ENABLE='2'  # level\n"),
        (
            "export TASK_QUEUE_ENABLE=1; export B=1\n",
            "export TASK_QUEUE_ENABLE=2; export B=1\n",
        ),
        (
            "export TASK_QUEUE_ENABLE=1 && echo set\n",
            "export TASK_QUEUE_ENABLE=2 && echo set\n",
        ),
    ],
)
def test_the_value_word_is_replaced_whole(tmp_path: Path, line: str, expected: str):
    text = _edit(tmp_path, line)
    assert expected in text
    if shutil.which("bash"):
        assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0


@pytest.mark.parametrize(
    "line",
    ["export TASK_QUEUE_ENABLE=$(echo 1)\n", "export TASK_QUEUE_ENABLE=${LEVEL:-1}\n"],
)
def test_a_computed_value_is_not_edited(tmp_path: Path, line: str):
    with pytest.raises(InputError, match="computed when the script runs"):
        _edit(tmp_path, line)


def test_values_that_need_quotes_are_quoted(tmp_path: Path):
    text = _edit(tmp_path, "export PYTORCH_NPU_ALLOC_CONF=x\n", "PYTORCH_NPU_ALLOC_CONF", "a b;c")
    assert "export PYTORCH_NPU_ALLOC_CONF='a b;c'\n" in text


def test_words_end_where_bash_ends_them():
    line = 'X=$(echo "a b") Y=1'
    assert line[: word_end(line, 0)] == 'X=$(echo "a b")'
    assert word_end('"open', 0) is None
    assert value_of("'1 '") == "1 " and value_of("$X") is None and value_of('"a"b') == "ab"


@pytest.mark.parametrize(
    "body",
    [
        "# torchrun --nproc_per_node 8 train.py\n",
        'echo "run torchrun yourself"\n',
        "MSG='torchrun train.py'\n",
    ],
)
def test_a_launcher_named_only_in_a_comment_or_string_is_not_the_command(tmp_path: Path, body: str):
    script = tmp_path / "run.sh"
    script.write_text("#!/usr/bin/env bash\n" + body, encoding="utf-8")
    with pytest.raises(InputError, match="no torchrun"):
        parse_launch(script)


@pytest.mark.parametrize(
    "line",
    [
        "TASK_QUEUE_ENABLE=2 torchrun --nproc_per_node 8 train.py\n",
        "exec torchrun --nproc_per_node 8 train.py\n",
        "python -m torch.distributed.run --nproc_per_node 8 train.py\n",
        "/usr/bin/env torchrun --nproc_per_node 8 train.py\n",
    ],
)
def test_launch_commands_are_found_behind_prefixes(tmp_path: Path, line: str):
    script = tmp_path / "run.sh"
    script.write_text("#!/usr/bin/env bash\n" + line, encoding="utf-8")
    assert parse_launch(script).nproc_per_node == 8


def test_a_command_prefix_assignment_is_what_gets_edited(tmp_path: Path):
    script = tmp_path / "run.sh"
    script.write_text(
        "#!/usr/bin/env bash\nexport TASK_QUEUE_ENABLE=1\n"
        "TASK_QUEUE_ENABLE=1 torchrun --nproc_per_node 8 train.py\n",
        encoding="utf-8",
    )
    editor = LaunchTextEditor(parse_launch(script))
    editor.set_env("TASK_QUEUE_ENABLE", "2")
    text = editor.results()[script][1]
    # the export is overridden by the command's own prefix: that is the one changed
    assert "TASK_QUEUE_ENABLE=2 torchrun" in text and "export TASK_QUEUE_ENABLE=1\n" in text


def test_a_new_export_never_lands_inside_a_block(tmp_path: Path):
    script = tmp_path / "run.sh"
    script.write_text(
        '#!/usr/bin/env bash\nif [ -n "$DEBUG" ]; then\n  export ASCEND_LAUNCH_BLOCKING=1\nfi\n'
        "torchrun --nproc_per_node 8 train.py\n",
        encoding="utf-8",
    )
    editor = LaunchTextEditor(parse_launch(script))
    editor.set_env("TASK_QUEUE_ENABLE", "2")
    lines = editor.results()[script][1].splitlines()
    assert lines.index("export TASK_QUEUE_ENABLE=2") == lines.index("fi") + 1


def test_a_heredoc_body_is_data_not_an_export(tmp_path: Path):
    script = tmp_path / "run.sh"
    script.write_text(
        "#!/usr/bin/env bash\nexport TASK_QUEUE_ENABLE=1\ncat > notes.txt <<'EOF'\n"
        "export TASK_QUEUE_ENABLE=0\nEOF\ntorchrun --nproc_per_node 8 train.py\n",
        encoding="utf-8",
    )
    launch = parse_launch(script)
    assert launch.env["TASK_QUEUE_ENABLE"] == "1"  # the heredoc's text is not run
    editor = LaunchTextEditor(launch)
    editor.set_env("TASK_QUEUE_ENABLE", "2")
    text = editor.results()[script][1]
    assert "export TASK_QUEUE_ENABLE=2\ncat" in text and "\nexport TASK_QUEUE_ENABLE=0\nEOF" in text


def test_declare_x_is_an_export(tmp_path: Path):
    text = _edit(tmp_path, "declare -x TASK_QUEUE_ENABLE=1\n")
    assert "declare -x TASK_QUEUE_ENABLE=2\n" in text


def test_a_later_plain_assignment_is_what_the_command_reads(tmp_path: Path):
    script = tmp_path / "run.sh"
    script.write_text(
        "#!/usr/bin/env bash\nexport TASK_QUEUE_ENABLE=1\nTASK_QUEUE_ENABLE=0  # off for now\n"
        "torchrun --nproc_per_node 8 train.py\nexport TASK_QUEUE_ENABLE=9\n",
        encoding="utf-8",
    )
    launch = parse_launch(script)
    assert launch.env["TASK_QUEUE_ENABLE"] == "0"  # the export after the command does not count
    editor = LaunchTextEditor(launch)
    editor.set_env("TASK_QUEUE_ENABLE", "2")
    text = editor.results()[script][1]
    assert "TASK_QUEUE_ENABLE=2  # off for now\n" in text
    assert "export TASK_QUEUE_ENABLE=1\n" in text and "export TASK_QUEUE_ENABLE=9\n" in text


def test_a_plain_assignment_of_an_unexported_name_is_not_the_environment(tmp_path: Path):
    script = tmp_path / "run.sh"
    script.write_text(
        "#!/usr/bin/env bash\nTASK_QUEUE_ENABLE=1\ntorchrun --nproc_per_node 8 train.py\n",
        encoding="utf-8",
    )
    launch = parse_launch(script)
    assert "TASK_QUEUE_ENABLE" not in launch.env
    editor = LaunchTextEditor(launch)
    editor.set_env("TASK_QUEUE_ENABLE", "2")
    text = editor.results()[script][1]
    assert "TASK_QUEUE_ENABLE=1\nexport TASK_QUEUE_ENABLE=2\ntorchrun" in text


# ---------------------------------------------------------------- the second, whole-script reading


@pytest.mark.parametrize(
    "body",
    [
        # a guarded export after the one the line editor would change or add
        'export A=1\n[ -n "$SLOW" ] && export TASK_QUEUE_ENABLE=1\n',
        # a sourced file that may or may not be read
        "export A=1\n[ -f env_tq.sh ] && source env_tq.sh\n",
        # a function that sets it, called before the command
        "export A=1\nsetup() {\n    export TASK_QUEUE_ENABLE=1\n}\nsetup\n",
        "export A=1\ncase $MODE in\n  slow) export TASK_QUEUE_ENABLE=0 ;;\nesac\n",
    ],
)
def test_an_edit_the_command_might_not_see_is_refused(tmp_path: Path, body: str):
    (tmp_path / "env_tq.sh").write_text("export TASK_QUEUE_ENABLE=1\n", encoding="utf-8")
    with pytest.raises(InputError, match="instead of the intended value"):
        _edit(tmp_path, body)


def test_chained_and_later_assignments_are_read_as_bash_does(tmp_path: Path):
    from advisor.shell.env import effective_env

    text = _edit(tmp_path, "export A=1; export TASK_QUEUE_ENABLE=1\nB=2\nexport B\n")
    script = tmp_path / "run.sh"
    env = effective_env(script, text, lambda p, w: None, lambda p: "").env
    assert env == {"A": "1", "TASK_QUEUE_ENABLE": "2", "B": "2"}
    guarded = effective_env(script, "[ -x y ] && export C=1\n" + COMMAND, lambda p, w: None, str)
    assert guarded.env == {"C": None} and guarded.found_launcher
