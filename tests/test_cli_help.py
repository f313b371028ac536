"""Help that describes the tool that exists: every input kind a command reads, one example
line, a usage line without templates, the install hints printed as typed; -v's phase times;
option values converted (and refused) without pydantic."""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path

import pytest
import typer

from advisor.cli.coercion import converter
from advisor.cli.commands import COMMANDS, COMPLETION_VARIABLE, RULES, command, named_command
from tests.cli_run import run_cli

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "examples" / "fsdp2" / "config.yaml"

PROFILE_WORDS = (
    "PyTorch profiler trace",
    "*.pt.trace.json",
    "folder of them",
    "*_ascend_pt",
    "*_ascend_ms",
    "parent folder of rank directories",
    "cluster_analysis_output",
)
CONFIG_WORDS = ("FSDP2 config YAML", "MindSpore Transformers", "Megatron-backend pretrain script")
# what each command reads, in the words of its help
READS = {
    "facts": (*PROFILE_WORDS, "training log"),
    "diagnose": PROFILE_WORDS + CONFIG_WORDS + ("launch script", "training log"),
    "suggest": PROFILE_WORDS + CONFIG_WORDS + ("launch script", "training log"),
    "report": PROFILE_WORDS + CONFIG_WORDS + ("launch script", "training log"),
    "check": (*CONFIG_WORDS, "FSDP2 launch scripts", "standard input"),
    "compare": (*PROFILE_WORDS, "training log"),
    "estimate": ("Hugging Face config.json", "FSDP2 training config", "training log"),
    "watch": ("training log",),
    "ledger": ("ledger",),
}


def _words(text: str) -> str:
    """The help's words, its wrapping undone (click breaks lines after a hyphen too)."""
    return re.sub(r"-\s+", "-", " ".join(text.split()))


@pytest.mark.parametrize("name", sorted(READS))
def test_every_command_names_what_it_reads_and_shows_an_example(name: str):
    result = run_cli(name, "-h")
    assert result.exit_code == 0
    words = _words(result.stdout)
    missing = [kind for kind in READS[name] if _words(kind) not in words]
    assert missing == [], f"advisor {name} -h does not mention {missing}"
    example = result.stdout.split("Example:", 1)[1].strip().splitlines()[0]
    assert example.startswith(f"advisor {name} ")


@pytest.mark.parametrize("argv", [("-h",), ("rules", "-h"), ("rules", "show", "-h")])
def test_the_groups_show_an_example_too(argv: tuple[str, ...]):
    assert "Example:\n    advisor " in run_cli(*argv).stdout


@pytest.mark.parametrize(
    ("name", "usage"),
    [
        ("suggest", "Usage: advisor suggest [OPTIONS] PATH CONFIG"),
        ("facts", "Usage: advisor facts [OPTIONS] [PATH]"),
        ("check", "Usage: advisor check [OPTIONS] [CONFIGS]..."),
        ("watch", "Usage: advisor watch [OPTIONS] LOG"),
    ],
)
def test_usage_names_arguments_in_capitals_not_templates(name: str, usage: str):
    text = run_cli(name, "-h").stdout
    assert text.splitlines()[0] == usage
    assert "{" not in text.splitlines()[0]


@pytest.mark.parametrize("name", ["facts", "diagnose", "suggest", "report"])
def test_the_dask_install_hint_keeps_its_extra(name: str):
    assert "pip install 'advisor[dask]'" in _words(run_cli(name, "-h").stdout)


def test_the_list_of_commands_is_never_cut_short():
    listed = run_cli("-h").stdout.split("Commands:", 1)[1]
    assert "..." not in listed
    assert "the main bottleneck and what is unknown" in _words(listed)


def test_verbose_prints_the_time_of_each_phase():
    result = run_cli("check", "-v", str(CONFIG))
    assert result.exit_code == 0
    for phase in (
        "loading the policies in",
        "checking in",
        "rendering in",
        "start-up (imports) in",
    ):
        assert f"advisor: {phase} " in result.stderr
    assert result.stderr.rstrip().splitlines()[-1].startswith("advisor: done in ")
    quiet = run_cli("check", str(CONFIG))
    assert " in 0." not in quiet.stderr  # only -v shows them


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("watch", "--consecutive", "0", "x.log"), "0 is below the minimum 1"),
        (("facts", "--jobs", "many", "x"), "'many' is not an integer"),
        (("watch", "--poll", "soon", "x.log"), "'soon' is not a number"),
        (("check", "-f", "xml", str(CONFIG)), "invalid choice: 'xml' (choose from text, json"),
    ],
)
def test_bad_option_values_are_one_usage_error(argv: tuple[str, ...], message: str):
    result = run_cli(*argv)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


class _Colour(StrEnum):
    red = "red"


def test_plain_types_are_converted_here_and_others_left_to_typer():
    info = typer.models.OptionInfo()
    several = converter(list[Path] | None, info)
    assert several is not None and several[1] and several[0]("a") == Path("a")
    choice = converter(_Colour, info)
    assert choice is not None and choice[0]("red") is _Colour.red
    with pytest.raises(typer.BadParameter, match="choose from red"):
        choice[0]("blue")
    assert converter(dict[str, int], info) is None
    assert converter(Path, typer.models.OptionInfo(exists=True)) is None  # typer checks it


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["-q", "check", "x.yaml"], "check"),
        (["rules", "list"], "rules"),
        (["--version"], None),
        (["chek", "x.yaml"], None),  # the whole tree answers: "Did you mean 'check'?"
    ],
)
def test_a_run_builds_the_command_it_names(argv: list[str], named: str | None):
    assert named_command(argv) == named


def test_shell_completion_gets_the_whole_tree(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(COMPLETION_VARIABLE, "complete_bash")
    assert named_command(["check"]) is None


def _help(tree: typer.core.TyperGroup, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    tree.main(argv, prog_name="advisor", standalone_mode=False)
    return capsys.readouterr().out


@pytest.mark.parametrize("name", [*COMMANDS, RULES])
def test_a_command_built_alone_has_the_help_of_the_whole_tree(
    name: str, capsys: pytest.CaptureFixture[str]
):
    alone = command(name)
    assert list(alone.commands) == [name]
    text = _help(alone, [name, "-h"], capsys)
    assert text.startswith(f"Usage: advisor {name} ")
    assert text == _help(command(), [name, "-h"], capsys)
