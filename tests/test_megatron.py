"""Megatron-backend scripts: arguments as bash and argparse see them, the parallel arithmetic,
and edits that land where each value is written and re-read to exactly the intended change."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from advisor.dialects.base import Probe
from advisor.dialects.megatron.layout import layout_of
from advisor.dialects.megatron.script import read_megatron
from advisor.dialects.megatron.text_editor import MegatronEditor
from advisor.dialects.registry import registry
from advisor.engine.conditions import Context, Truth, compile_condition
from advisor.model import InputError

REAL = Path(__file__).resolve().parents[2] / "shared" / "real" / "mindspeed-llm-scripts"
needs_real = pytest.mark.skipif(
    not REAL.is_dir(), reason="../shared/real/mindspeed-llm-scripts is not beside the checkout"
)


def detect(path: Path, text: str) -> str | None:
    found = registry().detect(Probe(path, text))
    return found.id if found is not None else None


def read(text: str, name: str = "pretrain.sh"):
    return read_megatron(Path(name), text)


HEAD = 'NPUS_PER_NODE=8\nNNODES=2\nDISTRIBUTED_ARGS="--nproc_per_node $NPUS_PER_NODE --nnodes $NNODES"\n'


def test_groups_knobs_and_the_last_occurrence():
    script = read(
        HEAD
        + "TP=4\nPP=2\n"
        + 'A="\n    --tensor-model-parallel-size ${TP} \\\n    --lr 1e-5 \\\n    --bf16\n"\n'
        + "B='--lr 2e-5'\n"
        + "torchrun $DISTRIBUTED_ARGS pretrain_gpt.py $A $B --pipeline-model-parallel-size=$PP"
        + " --seq-length $((1024*4)) --data-path ${DATA:-/data/x} | tee log\n"
    )
    args = script.args
    assert script.world_size == 16 and script.program == "pretrain_gpt.py"
    assert args["tensor-model-parallel-size"] == 4
    assert args["pipeline-model-parallel-size"] == 2
    assert args["lr"] == 2e-5  # the later group wins, as argparse does
    assert args["bf16"] is True and args["seq-length"] == 4096
    assert args["data-path"] == "/data/x"
    assert "use-flash-attn" not in args  # known to be absent
    layout = layout_of(args, script.world_size)
    assert (layout.dp, layout.tp, layout.pp) == (2, 4, 2)


def test_unknown_is_never_guessed():
    script = read(
        HEAD
        + 'EXTRA=""\nif [ -n "$RESUME" ]; then\n    EXTRA="--no-load-optim"\nfi\n'
        + "torchrun $DISTRIBUTED_ARGS pretrain_gpt.py --lr 1e-5 $EXTRA $(cat more_args) --bf16\n"
    )
    args = script.args
    assert args["no-load-optim"] is None  # set inside an if: maybe
    assert args["lr"] is None  # written before an unquoted $(...) that may repeat it
    assert args["bf16"] is True  # written after it: known
    assert args["use-flash-attn"] is None  # may be in the substitution's output
    ctx = Context(config={"args": args})
    condition = compile_condition(
        {"config": "args.use-flash-attn", "op": "eq", "value": True, "default": False},
        lambda name: None,
    )
    assert condition.evaluate(ctx).truth is Truth.UNKNOWN


def test_undefined_variables_expand_to_nothing_with_a_note():
    script = read(HEAD + "torchrun $DISTRIBUTED_ARGS pretrain_gpt.py $MOE_ARGS --bf16\n")
    assert script.args["bf16"] is True
    assert any("MOE_ARGS" in n for n in script.notes)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (HEAD + 'A="--lr 1\ntorchrun pretrain_gpt.py $A\n', "unterminated"),
        ("echo torchrun pretrain_gpt.py\n# torchrun x.py\n", "no torchrun"),
    ],
)
def test_bad_scripts_get_one_line(text: str, fragment: str):
    with pytest.raises(InputError, match=fragment):
        read(text)


def test_dialects_are_told_apart(tmp_path: Path):
    cases = {
        "mcore.sh": (
            HEAD + "torchrun $DISTRIBUTED_ARGS pretrain_gpt.py --bf16\n",
            "megatron-script",
        ),
        "fsdp.sh": (
            "torchrun --nproc_per_node 8 train_fsdp2.py c.yaml --training.x 1\n",
            "launch-script",
        ),
        "env.sh": ("export TASK_QUEUE_ENABLE=2\n", None),
        "c.yaml": ("model:\n  model_id: qwen3\nparallel:\n  fsdp_size: 8\n", "fsdp2-config"),
        "mf.yaml": ("parallel_config:\n  data_parallel: 8\n", "mindformers-config"),
        "ci.yaml": ("on: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n", None),
        "notes.txt": ("torchrun x.py\n", None),
    }
    for name, (text, kind) in cases.items():
        assert detect(tmp_path / name, text) == kind, name


# ---------------------------------------------------------------- edits


def edited(text: str, *changes: tuple) -> str:
    """(flag, value[, near]): None removes the flag."""
    editor = MegatronEditor(read(text))
    for flag, value, *near in changes:
        if value is None:
            editor.remove_flag(flag)
        else:
            editor.set_flag(flag, value, near[0] if near else ())
    return editor.result()


SCRIPT = (
    HEAD
    + "TP=2\nMBS=2\n"
    + 'GPT_ARGS="\n    --tensor-model-parallel-size ${TP} \\\n    --micro-batch-size ${MBS} \\\n'
    + '    --expert-tensor-parallel-size ${TP} \\\n    --use-flash-attn \\\n    --lr 1e-5\n"\n'
    + "torchrun $DISTRIBUTED_ARGS pretrain_gpt.py \\\n    $GPT_ARGS \\\n    --bf16 \\\n"
    + "    --use-flash-attn \\\n    --save /ckpt\n"
)


def test_a_knob_read_by_one_flag_is_edited_at_the_knob():
    after = edited(SCRIPT, ("micro-batch-size", 1))
    assert "MBS=1\n" in after and "${MBS}" in after


def test_a_knob_read_by_two_flags_is_left_alone():
    after = edited(SCRIPT, ("tensor-model-parallel-size", 4))
    assert "TP=2\n" in after  # --expert-tensor-parallel-size still reads it
    assert "--tensor-model-parallel-size 4 \\" in after
    args = read(after).args
    assert args["tensor-model-parallel-size"] == 4 and args["expert-tensor-parallel-size"] == 2


def test_new_flag_beside_its_neighbour_and_removal_everywhere():
    after = edited(
        SCRIPT,
        ("use-flash-attn", None),
        ("sequence-parallel", True, ["tensor-model-parallel-size"]),
    )
    assert "--use-flash-attn" not in after
    assert "    --sequence-parallel \\\n    --tensor-model-parallel-size" in after
    assert "    --bf16 \\\n    --save /ckpt\n" in after  # the command still continues
    args = read(after).args
    assert args["sequence-parallel"] is True and "use-flash-attn" not in args


def test_values_that_are_not_plain_words_and_hidden_flags_are_refused():
    with pytest.raises(InputError, match="plain shell word"):
        edited(SCRIPT, ("lr", "1e-5; rm -rf /"))
    hidden = HEAD + 'X=""\nif true; then X="--bf16"; fi\ntorchrun pretrain_gpt.py $X --lr 1\n'
    with pytest.raises(InputError, match="cannot be read statically"):
        edited(hidden, ("bf16", None))


# ---------------------------------------------------------------- real scripts


def _sources() -> dict[str, dict[str, str]]:
    layouts = {}
    for line in (REAL / "SOURCES.txt").read_text().splitlines():
        if " <- " not in line or not line.split(" <- ", 1)[0].strip().endswith(".sh"):
            continue
        name, rest = line.split(" <- ", 1)
        layouts[name.strip()] = dict(re.findall(r"\b([A-Z_]+)=(\S+)", rest.split("|")[3]))
    return layouts


@needs_real
def test_every_real_script_reads_as_its_recorded_layout():
    layouts = _sources()
    assert len(layouts) == 38
    for name, knobs in layouts.items():
        script = read_megatron(REAL / name, (REAL / name).read_text())
        args = script.args
        assert script.world_size == int(knobs["NNODES"]) * int(knobs["NPUS_PER_NODE"]), name
        assert args.get("tensor-model-parallel-size", 1) == int(knobs["TP"]), name
        assert args.get("pipeline-model-parallel-size", 1) == int(knobs["PP"]), name
        if "MBS" in knobs:
            assert args["micro-batch-size"] == int(knobs["MBS"]), name
            assert args["global-batch-size"] == int(knobs["GBS"]), name
        assert not layout_of(args, script.world_size).problems, name
        assert detect(REAL / name, (REAL / name).read_text()) == "megatron-script"


GOLDEN = [
    # (script, changes, lines that must appear in the diff)
    (
        "qwen3__pretrain_qwen3_32b_4K_ptd.sh",
        [("use-ascend-mc2", True, ["sequence-parallel"])],
        ["+    --use-ascend-mc2 \\"],
    ),
    (
        "qwen3__pretrain_qwen3_8b_4K_ptd.sh",
        [("lr", "2e-6")],
        ["-    --lr 1.25e-6 \\", "+    --lr 2e-6 \\"],
    ),
    (
        "qwen3__pretrain_qwen3_8b_4K_ptd.sh",
        [("pipeline-model-parallel-size", 4)],
        ["-PP=2", "+PP=4"],
    ),
    (
        "hunyuan3__pretrain_hunyuan3_299b_4k_A3_ptd.sh",
        [("no-masked-softmax-fusion", None)],
        ["-    --no-masked-softmax-fusion \\", "-    --no-masked-softmax-fusion \\"],
    ),
]


@needs_real
@pytest.mark.parametrize(("name", "changes", "expected"), GOLDEN, ids=[g[0] for g in GOLDEN])
def test_golden_edits_on_real_scripts(tmp_path: Path, name: str, changes, expected):
    text = (REAL / name).read_text()
    before = read_megatron(REAL / name, text).args.known_values()
    after = edited(text, *changes)
    got = read_megatron(REAL / name, after).args.known_values()
    intended = dict(before)
    for flag, value, *_ in changes:
        if value is None:
            intended.pop(flag)
        else:
            intended[flag] = value if not isinstance(value, str) else float(value)
    assert got == intended  # exactly the intended change, nothing else
    shutil.copy(REAL / name, tmp_path / name)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    import difflib

    diff = "".join(
        difflib.unified_diff(
            text.splitlines(True), after.splitlines(True), f"a/{name}", f"b/{name}"
        )
    )
    for line in expected:
        assert diff.count(line + "\n") >= expected.count(line), line
    applied = subprocess.run(
        ["git", "apply", "--check", "-"], cwd=tmp_path, input=diff, text=True, capture_output=True
    )
    assert applied.returncode == 0, applied.stderr
    if shutil.which("bash"):
        assert subprocess.run(["bash", "-n"], input=after, text=True).returncode == 0


# ---------------------------------------------------------------- check over the real scripts

# Every finding on upstream's 38 scripts, reviewed against domain/megatron-backend.md.
SEQUENCE_PARALLEL_WITH_TP1 = {
    # --sequence-parallel with TP = 1: Megatron drops it with a warning (MEG:args#L757-761);
    # the MoE scripts copy it from TP > 1 siblings
    "deepseek2_lite__pretrain_deepseek2_lite_16b_ptd_8p.sh",
    "deepseek3__tune_deepseek3_671b_4k_lora_ptd.sh",
    "deepseek4_flash__pretrain_deepseek4_flash_128k_A3_ptd.sh",
    "gated_deltanet__pretrain_gated_deltanet_1.3B_4K_A3_ptd.sh",
    "glm45-air__pretrain_glm45_air_106b_4k_A3_ptd.sh",
    "hunyuan3__pretrain_hunyuan3_299b_4k_A3_ptd.sh",
    "ling_v2__pretrain_ling_mini_16b_4k_ptd.sh",
    "llama2__pretrain_llama2_13b_pack_ptd_o2.sh",
    "minimax27__pretrain_minimax27_229b_4K_A3_ptd.sh",
    "phi35__pretrain_phi35_mini_A3_ptd.sh",
    "plm__pretrain_plm_1point8b_ptd.sh",
    "qwen3__pretrain_qwen3_0point6b_4K_ptd.sh",
    "qwen3_moe__pretrain_qwen3_235b_a22b_4k_A3_ptd.sh",
    "qwen3_moe__pretrain_qwen3_30b_a3b_4K_ptd.sh",
}
REVIEWED = {
    # MC2 with TP=1: the document's section 5 notes the validator rejects this upstream script
    ("gated_deltanet__pretrain_gated_deltanet_1.3B_4K_A3_ptd.sh", "policy.mg-mc2-needs-tp-and-sp"),
    # HF2MG_ARGS is set inside `if [ "${CKPT_LOAD_DIR}" != "None" ]`: unknown statically
    ("gated_deltanet__pretrain_gated_deltanet_1.3B_4K_A3_ptd.sh", "policy.mg-hidden-args"),
    # PP 4 with GBS 64, MBS 1, DP 32: m = 2 micro-batches, bubble (4-1)/(2+4-1) = 60%
    ("glm45-air__pretrain_glm45_air_106b_4k_A3_ptd.sh", "policy.mg-micro-batches-below-stages"),
    # CoC in a TP = 1 script (section 5: it only acts on TP collectives)
    ("qwen3__pretrain_qwen3_8b_4K_ptd.sh", "policy.mg-coc-without-tp"),
    # --log-interval 1000 in OUTPUT_ARGS, then --log-interval 1 on the command line
    ("qwen3__tune_qwen3_32b_256K_full_pack_A3_ptd.sh", "policy.mg-doubled-flag"),
    ("qwen3__tune_qwen3_32b_32K_full_pack_A3_ptd.sh", "policy.mg-doubled-flag"),
    ("qwen3_moe__tune_qwen3_30b_a3b_256K_full_pack_A3_ptd.sh", "policy.mg-doubled-flag"),
} | {(name, "policy.mg-sequence-parallel-without-tp") for name in SEQUENCE_PARALLEL_WITH_TP1}


@needs_real
def test_check_over_every_real_script_finds_exactly_the_reviewed_findings():
    from advisor.app.check import run_check
    from advisor.app.rulesets import load_policies

    paths = sorted(REAL.glob("*.sh"))
    result = run_check(load_policies(), configs=paths)
    assert set(result.dialects.values()) == {"megatron-script"} and not result.skipped
    found = {(Path(f.file).name, f.rule_id) for f in result.findings}
    # sequence parallel with TP 1 is one note for the run, counting every script it is in
    repeated = "policy.mg-sequence-parallel-without-tp"
    expected = {(name, rule) for name, rule in REVIEWED if rule != repeated}
    assert found - {(n, r) for n, r in found if r == repeated} == expected
    (note,) = [f for f in result.findings if f.rule_id == repeated]
    count = sum(rule == repeated for _, rule in REVIEWED)
    assert f"({count} places in {count} file(s); the first is shown)" in note.message
    # each finding sits on the flag it is about
    for f in result.findings:
        line = (REAL / Path(f.file).name).read_text().splitlines()[f.line - 1]
        flag = f.key.partition(":")[2].removeprefix("args.")
        if not flag.startswith("layout."):  # derived values sit on the flag they come from
            assert f"--{flag}" in line, (f.rule_id, line)
