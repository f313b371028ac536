"""`advisor check` over a whole repository: every folder gives a report, each file is judged as
what it is (a training, inference or MindSpeed-MM file), the launch line is read as bash runs
it, paths resolve from one root, and the release decides the rules whose truth depends on it.
The repositories here are look-alikes of the upstream ones (benchmarks/corpus.py brings the
real ones; test_upstream_corpus below runs on them when ADVISOR_CORPUS names their folder)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.app.check import run_check
from advisor.app.rulesets import load_graph
from advisor.cli import app
from advisor.core.validation import schema_errors
from advisor.shell.commands import split_commands
from advisor.shell.env import effective_env
from advisor.shell.expand import ShellError
from advisor.shell.launch import LaunchScript, Override, parse_launch
from advisor.shell.overrides import effective_config
from advisor.shell.reader import read_command
from tests.cli_run import run_cli

runner = CliRunner()
RULES = load_graph().ruleset

FSDP2_YAML = "model:\n  model_id: qwen3_moe\ntraining:\n  logging_steps: 10\n"
MEGATRON_ARGS = (
    "--tensor-model-parallel-size 1 --pipeline-model-parallel-size 4 "
    "--micro-batch-size 1 --global-batch-size 2 --num-layers 8"
)


def _write(root: Path, files: dict[str, str]) -> Path:
    (root / ".git").mkdir(exist_ok=True)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    return root


def _ids(result: object, file: str | None = None) -> list[str]:
    findings = result.findings  # type: ignore[attr-defined]
    return [f.rule_id for f in findings if f.counts and (file is None or f.file.endswith(file))]


# ---------------------------------------------------------------- one file never stops a run


def test_a_folder_with_broken_and_foreign_files_still_gives_its_report(tmp_path: Path):
    repo = _write(
        tmp_path,
        {
            "configs/math.yaml": "pattern: */x\n",  # `*/` read as an alias: not YAML
            "configs/dup.yaml": "a: 1\na: 2\n",
            "scripts/no_launcher.sh": "echo hello\n",
            "scripts/run.sh": (
                "source /usr/local/Ascend/cann/set_env.sh\nexport ASCEND_LAUNCH_BLOCKING=1\n"
                "torchrun --nproc_per_node 8 train_fsdp2.py configs/train.yaml\n"
            ),
            "configs/train.yaml": FSDP2_YAML,
        },
    )
    result = run_check(RULES, configs=[repo])
    skipped = dict(result.skipped)
    assert "cannot be read" in skipped[str(repo / "configs/math.yaml")]
    assert "cannot be read" in skipped[str(repo / "configs/dup.yaml")]
    ids = _ids(result, "run.sh")
    # the missing CANN env file is a note, its exports unknown; the script is still judged
    assert "policy.launch-source-unread" in ids and "policy.launch-blocking" in ids
    # TRAINING_BACKEND may come from the unread file: not reported as missing
    assert "policy.training-backend" not in ids


def test_named_unreadable_files_are_findings_and_fail_the_run(tmp_path: Path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("training:\n  x: [1\n", encoding="utf-8")
    good = tmp_path / "good.yaml"
    good.write_text("optimization:\n  indexer_loss_coeff: 0.1\n", encoding="utf-8")
    out = runner.invoke(app, ["check", str(broken), str(good), "--format", "sarif"])
    assert out.exit_code == 1, out.output
    sarif = json.loads(out.output)
    rules = {r["ruleId"] for r in sarif["runs"][0]["results"]}
    assert rules == {"policy.file-unreadable", "policy.config-unknown-key"}


# a key to move whose value spans several lines (no safe edit), and one that moves
UNMOVABLE = (
    "model:\n  model_id: qwen3\ntraining:\n  lr: 1.0e-5\n  fsdp_modules:\n"
    "    - model.layers.{*}\n    - lm_head\n  indexer_loss_coeff: 0.1\n"
    "optimization:\n  max_grad_norm: 1.0\n"
)


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "gitlab"])
def test_a_fix_that_cannot_be_built_is_left_out_and_the_rest_applied(tmp_path: Path, fmt: str):
    config = tmp_path / "train.yaml"
    config.write_text(UNMOVABLE, encoding="utf-8")
    ran = run_cli("check", str(config), "--fix", "--format", fmt)
    assert ran.exit_code == 1, ran.output  # the findings stand; no usage error
    note = "move training.fsdp_modules to parallel.fsdp_modules: left out, it cannot be built"
    assert note in ran.stderr and "spans several lines" in ran.stderr
    fixed = config.read_text(encoding="utf-8")
    # the fix that could be built was applied, the other left the file as it was
    assert "training:\n  lr: 1.0e-5\n  fsdp_modules:\n" in fixed
    assert "  max_grad_norm: 1.0\n" in fixed.split("training:")[1]
    assert "optimization:\n  max_grad_norm" not in fixed
    out = ran.stdout
    if fmt == "json":
        report = json.loads(out[out.index("{") :])
        assert schema_errors(report, "findings.schema.json") == []
        (left_out,) = report["fixes_left_out"]
        assert note in left_out
        (finding,) = [f for f in report["findings"] if "fsdp_modules" in f["message"]]
        assert finding["fix"] is None
    if fmt == "sarif":
        sarif = json.loads(out[out.index("{") :])
        assert schema_errors(sarif, "sarif/sarif-2.1.0.json") == []
        results = sarif["runs"][0]["results"]
        assert any("fsdp_modules" in r["message"]["text"] and "fixes" not in r for r in results)
    if fmt == "text":
        assert "fsdp_modules" in out and "[fixable]" not in out


def test_an_unbuildable_fix_leaves_its_finding_without_a_fix_without_fix(tmp_path: Path):
    config = tmp_path / "train.yaml"
    config.write_text(UNMOVABLE, encoding="utf-8")
    ran = run_cli("check", str(config), "--format", "json")
    report = json.loads(ran.stdout)
    by_key = {f["message"].split(":")[0]: f for f in report["findings"]}
    assert by_key["training.fsdp_modules"]["fix"] is None
    assert by_key["optimization.max_grad_norm"]["fix"] is not None
    assert len(report["fixes_left_out"]) == 1
    assert config.read_text(encoding="utf-8") == UNMOVABLE


def test_sarif_names_the_skipped_files_and_why_in_its_invocation(tmp_path: Path):
    repo = _write(
        tmp_path,
        {
            "configs/dup.yaml": "a: 1\na: 2\n",  # found in the walk, cannot be read
            "configs/train.yaml": UNMOVABLE,  # one fix that cannot be built
            "notes.sh": "echo hello\n",
        },
    )
    named = repo / "ci.yaml"  # named, no training file
    named.write_text("stages: [test]\n", encoding="utf-8")
    ran = run_cli("check", str(repo / "configs"), str(named), "--format", "sarif")
    assert ran.exit_code == 1, ran.output
    sarif = json.loads(ran.stdout)
    assert schema_errors(sarif, "sarif/sarif-2.1.0.json") == []
    (invocation,) = sarif["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is True
    notes = invocation["toolExecutionNotifications"]
    skipped = {
        n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: n["message"]["text"]
        for n in notes
        if n["descriptor"]["id"] == "advisor/skipped"
    }
    (dup,) = [uri for uri in skipped if uri.endswith("configs/dup.yaml")]
    assert "cannot be read" in skipped[dup]
    (ci,) = [uri for uri in skipped if uri.endswith("ci.yaml")]
    assert "not a training config" in skipped[ci]
    (left_out,) = [n for n in notes if n["descriptor"]["id"] == "advisor/fix-left-out"]
    assert "training.fsdp_modules" in left_out["message"]["text"]
    # -q: findings only
    quiet = json.loads(run_cli("-q", "check", str(repo / "configs"), "--format", "sarif").stdout)
    quiet_notes = quiet["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert not [n for n in quiet_notes if n["descriptor"]["id"] == "advisor/skipped"]


def test_a_walked_script_launched_only_through_eval_is_reported(tmp_path: Path):
    repo = _write(
        tmp_path,
        {"run.sh": 'eval "torchrun $(cat args.txt) train_fsdp2.py c.yaml"\n'},
    )
    result = run_check(RULES, configs=[repo])
    assert _ids(result) == ["policy.launch-unreadable"]
    (finding,) = result.findings
    assert "eval" in finding.message


# ---------------------------------------------------------------- one root for relative paths


def test_sourced_files_and_configs_resolve_from_the_repository_root(tmp_path: Path):
    repo = _write(
        tmp_path,
        {
            "examples/fsdp2/env_config.sh": "export TASK_QUEUE_ENABLE=3\n",
            "examples/fsdp2/qwen3/train.yaml": FSDP2_YAML,
            "examples/fsdp2/qwen3/run.sh": (
                "source examples/fsdp2/env_config.sh\n"
                "torchrun --nproc_per_node 8 train_fsdp2.py examples/fsdp2/qwen3/train.yaml\n"
            ),
            "examples/fsdp2/qwen3/missing.sh": (
                "torchrun --nproc_per_node 8 train_fsdp2.py examples/fsdp2/qwen3/nope.yaml\n"
            ),
        },
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cwd = Path.cwd()
    os.chdir(elsewhere)  # the working folder does not matter: the repository's root does
    try:
        result = run_check(RULES, configs=[repo / "examples"])
    finally:
        os.chdir(cwd)
    assert "policy.task-queue-value" in _ids(result, "env_config.sh")
    assert "policy.launch-source-unread" not in _ids(result)
    missing = [f for f in result.findings if f.rule_id == "policy.launch-config-missing"]
    assert [Path(f.file).name for f in missing] == ["missing.sh"]
    # with the YAML unknown, no rule judges its keys as unset (the environment is still read)
    assert set(_ids(result, "missing.sh")) == {
        "policy.launch-config-missing",
        "policy.training-backend",
    }


# ---------------------------------------------------------------- what a file is


def test_mindspeed_mm_files_are_skipped_with_the_reason(tmp_path: Path):
    repo = _write(
        tmp_path,
        {
            "examples/qwen3vl/config.yaml": (
                "parallel:\n  fully_shard_parallel_size: auto\n  fsdp_plan: {}\n"
                "model:\n  model_id: qwen3vl\ntraining:\n  lr: 1.0e-5\n"
            ),
            "examples/qwen3vl/finetune.sh": (
                "torchrun --nproc_per_node 8 mindspeed_mm/fsdp/train/trainer.py "
                "examples/qwen3vl/config.yaml\n"
            ),
            "examples/internvl/pretrain.sh": (
                f"torchrun --nproc_per_node 8 pretrain_vlm.py {MEGATRON_ARGS}\n"
            ),
        },
    )
    result = run_check(RULES, configs=[repo])
    assert result.findings == [] and result.dialects == {}
    reasons = [why for _, why in result.skipped]
    assert len(reasons) == 3 and all("MindSpeed-MM" in r for r in reasons)


def test_inference_scripts_get_no_training_schedule_rules(tmp_path: Path):
    repo = _write(
        tmp_path,
        {
            "infer.sh": f"torchrun --nnodes 1 --nproc_per_node 8 inference.py {MEGATRON_ARGS}\n",
            "train.sh": f"torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py {MEGATRON_ARGS}\n",
        },
    )
    result = run_check(RULES, configs=[repo])
    assert result.dialects[str(repo / "infer.sh")] == "megatron-inference"
    assert "policy.mg-micro-batches-below-stages" in _ids(result, "train.sh")
    assert _ids(result, "infer.sh") == []


def test_msrun_training_scripts_are_read_like_torchrun(tmp_path: Path):
    repo = _write(
        tmp_path,
        {
            "pretrain_ms.sh": (
                'DISTRIBUTED_ARGS="--worker_num 8 --local_worker_num 8 --master_port 6000"\n'
                "msrun $DISTRIBUTED_ARGS pretrain_gpt.py "
                "--tensor-model-parallel-size 3 --num-layers 8\n"
            )
        },
    )
    result = run_check(RULES, configs=[repo])
    assert result.dialects == {str(repo / "pretrain_ms.sh"): "megatron-script"}
    # the worker count is the world: TP 3 does not divide 8
    assert "policy.mg-parallel-arithmetic" in _ids(result)


def test_mindformers_parallel_modes_and_predict_configs(tmp_path: Path):
    def config(mode: str, run_mode: str = "train") -> str:
        return (
            f"run_mode: {run_mode}\nparallel:\n  parallel_mode: {mode}\n"
            "parallel_config:\n  data_parallel: 1\n  pipeline_stage: 4\n  micro_batch_num: 1\n"
        )

    repo = _write(
        tmp_path,
        {
            "train.yaml": config("SEMI_AUTO_PARALLEL"),
            "predict.yaml": config("MANUAL_PARALLEL", "predict"),
            "lower.yaml": config("semi_auto_parallel"),
        },
    )
    result = run_check(RULES, configs=[repo])
    assert result.dialects[str(repo / "predict.yaml")] == "mindformers-inference"
    assert _ids(result, "predict.yaml") == []  # no micro-batch rule without a schedule
    assert "policy.mf-micro-batches-below-stages" in _ids(result, "train.yaml")
    assert "policy.mf-config-keys" not in _ids(result, "train.yaml")
    assert "policy.mf-config-keys" in _ids(result, "lower.yaml")  # MindFormers rejects it
    older = run_check(RULES, configs=[repo / "predict.yaml"], target={"mindformers": (1, 5, 0)})
    assert _ids(older) == ["policy.mf-parallel-mode-manual-before-1-6"]


# ---------------------------------------------------------------- broken scripts


def test_crlf_and_a_command_cut_from_its_arguments_are_reported(tmp_path: Path):
    repo = _write(
        tmp_path,
        {
            "crlf.sh": f"torchrun --nproc_per_node 8 pretrain_gpt.py \\\r\n {MEGATRON_ARGS}\r\n",
            "cut.sh": f"torchrun --nproc_per_node 8 pretrain_gpt.py\n    {MEGATRON_ARGS}\n",
        },
    )
    result = run_check(RULES, configs=[repo])
    assert "policy.launch-crlf" in _ids(result, "crlf.sh")
    (cut,) = [f for f in result.findings if f.rule_id == "policy.launch-no-arguments"]
    assert cut.file.endswith("cut.sh") and cut.line == 1
    assert "--tensor-model-parallel-size" in cut.message


# ---------------------------------------------------------------- the launch line as bash runs it


def _launch(tmp_path: Path, body: str) -> LaunchScript:
    path = tmp_path / "run.sh"
    path.write_text(body, encoding="utf-8")
    return parse_launch(path)


def test_pipes_redirections_and_positional_arguments_never_become_values(tmp_path: Path):
    script = _launch(
        tmp_path,
        'NPUS_PER_NODE=8\nlogfile=x\ntorchrun --nnodes 2 --nproc_per_node "${NPUS_PER_NODE}" '
        'train_fsdp2.py c.yaml --training.logging_steps 1 --training.seed 7 "$@" '
        "2>&1 | tee logs/train_${logfile}.log\n",
    )
    assert script.world_size == 16
    assert [(o.path, o.value) for o in script.overrides] == [
        ("training.logging_steps", "1"),
        ("training.seed", "7"),
    ]
    assert script.opaque_arguments


def test_env_unset_and_stdbuf_prefixes_start_the_launcher(tmp_path: Path):
    script = _launch(
        tmp_path,
        "export A=1\nexport B=2\nenv -u A stdbuf -oL torchrun --nproc_per_node 8 "
        "train_fsdp2.py c.yaml\n",
    )
    assert script.command_line == 3
    assert "A" not in script.env and script.env["B"] == "2"


def test_an_array_element_of_a_plain_string_is_the_string(tmp_path: Path):
    path = tmp_path / "pretrain.sh"
    path.write_text(
        'GPT_ARGS="--tensor-model-parallel-size 2 --num-layers 8"\n'
        "torchrun --nproc_per_node 8 pretrain_gpt.py ${GPT_ARGS[@]}\n",
        encoding="utf-8",
    )
    result = run_check(RULES, configs=[path])
    assert result.dialects == {str(path): "megatron-script"}
    assert "policy.mg-hidden-args" not in _ids(result)


ARRAY_SCRIPT = """#!/bin/bash
TP=3
GPT_ARGS=(
    --tensor-model-parallel-size ${TP}   # a comment holding ) and "quotes"
    --pipeline-model-parallel-size 1
    "--micro-batch-size" 1 --global-batch-size 8
)
GPT_ARGS+=(--num-layers 8)
ONE=("--seq-length 4096")
torchrun --nproc_per_node 8 pretrain_gpt.py "${GPT_ARGS[@]}" "${ONE[@]}" --lr "${GPT_ARGS[5]}"
"""


def test_an_array_assignment_is_one_assignment_and_expands_to_its_words(tmp_path: Path):
    path = tmp_path / "pretrain.sh"
    path.write_text(ARRAY_SCRIPT, encoding="utf-8")
    commands = split_commands(ARRAY_SCRIPT)
    # TP=3, the array (one word over four lines), the append, ONE, the launcher
    assert [c.texts(ARRAY_SCRIPT)[0].split("=")[0] for c in commands] == [
        "TP",
        "GPT_ARGS",
        "GPT_ARGS+",
        "ONE",
        "torchrun",
    ]
    reading = read_command(path, ARRAY_SCRIPT)
    assert [f.text for f in reading.arguments] == [
        *("--tensor-model-parallel-size", "3", "--pipeline-model-parallel-size", "1"),
        *("--micro-batch-size", "1", "--global-batch-size", "8", "--num-layers", "8"),
        "--seq-length 4096",  # a quoted element stays one word
        *("--lr", "1"),
    ]
    # a value from the array is still the text written in the file (an edit changes it there)
    (tp,) = [f for f in reading.arguments if f.text == "3"]
    assert tp.span() == (ARRAY_SCRIPT.index("TP=3") + 3, ARRAY_SCRIPT.index("TP=3") + 4)
    # the flags are read: TP 3 > 1 needs CUDA_DEVICE_MAX_CONNECTIONS=1, and nothing is hidden
    result = run_check(RULES, configs=[path])
    assert "policy.mg-device-max-connections" in _ids(result)
    assert "policy.mg-hidden-args" not in _ids(result)


def test_array_forms_bash_gives_one_way(tmp_path: Path):
    def arguments(script: str) -> list[str]:
        return [f.text for f in read_command(tmp_path / "a.sh", script).arguments]

    launch = "torchrun --nproc_per_node 8 pretrain_gpt.py "
    two = 'A=("--x 1" --y)\n'
    assert arguments(two + launch + "${A[@]}") == ["--x", "1", "--y"]  # unquoted: split again
    assert arguments(two + launch + '"${A[*]}"') == ["--x 1 --y"]  # quoted [*]: one word
    assert arguments(two + launch + "$A") == ["--x", "1"]  # $A: the first element
    assert arguments(two + launch + '"${A[7]}" --z') == ["--z"]  # past the end: nothing
    assert arguments("A=()\n" + launch + '"${A[@]}" --z') == ["--z"]
    assert arguments('B="--p 2"\nA=($B --q)\n' + launch + '"${A[@]}"') == ["--p", "2", "--q"]
    # an array never reaches a child's environment; what follows is still read
    text = (
        "A=(x y)\nexport B=2\nexport A\nC=1\nC+=2\nexport C\n"
        "torchrun --nproc_per_node 8 train_fsdp2.py c.yaml\n"
    )
    env = effective_env(tmp_path / "r.sh", text, lambda _p, _a: None, lambda _p: "").env
    assert env == {"A": None, "B": "2", "C": "12"}
    with pytest.raises(ShellError):
        split_commands("A=(--x 1\n")


def test_the_effective_config_reads_bare_and_abbreviated_flags_as_the_backend(tmp_path: Path):
    def launch(*overrides: tuple[str, str | None]) -> LaunchScript:
        script = LaunchScript(path=tmp_path / "run.sh")
        script.overrides = [Override(p, v, 1, i) for i, (p, v) in enumerate(overrides)]
        return script

    keys = {"training": ["profile", "profile_ranks", "logging_steps"]}
    yaml_sets: dict[str, object] = {"training": {"profile": False, "logging_steps": 10}}
    yaml_lacks: dict[str, object] = {"training": {}}
    bare = launch(("training.profile", None))
    abbreviated = launch(("training.logging", "1"))
    # without the key in the YAML both work: a bare flag is true, a unique prefix names its key
    assert effective_config(yaml_lacks, bare, keys)["training"] == {"profile": True}
    assert effective_config(yaml_lacks, abbreviated, keys)["training"] == {"logging_steps": 1}
    # the YAML re-appended after the command line wins over both
    assert effective_config(yaml_sets, bare, keys)["training"]["profile"] is False  # type: ignore[index]
    assert effective_config(yaml_sets, abbreviated, keys)["training"]["logging_steps"] == 10  # type: ignore[index]
    # an ambiguous prefix is an argparse error: nothing is taken from it
    ambiguous = launch(("training.prof", "1"))
    assert effective_config(yaml_lacks, ambiguous, keys)["training"] == {}


# ---------------------------------------------------------------- releases


def test_mc2_without_tp_aborts_on_26_and_warns_on_2_2(tmp_path: Path):
    path = tmp_path / "pretrain.sh"
    path.write_text(
        f"torchrun --nproc_per_node 8 pretrain_gpt.py {MEGATRON_ARGS} --use-ascend-mc2\n",
        encoding="utf-8",
    )
    newest = run_check(RULES, configs=[path])
    assert "policy.mg-mc2-needs-tp-and-sp" in _ids(newest)
    (tmp_path / "setup.py").write_text(
        "__version__ = '2.2.0'\n__package_name__ = 'mindspeed_llm'\n", encoding="utf-8"
    )
    old = run_check(RULES, configs=[path], root=tmp_path)
    assert "policy.mg-mc2-needs-tp-and-sp" not in _ids(old)
    (warned,) = [f for f in old.findings if f.rule_id == "policy.mg-mc2-disabled-without-tp-and-sp"]
    assert warned.severity == "warning"
    cli = runner.invoke(app, ["check", str(path), "--target", "mindspeed-llm@26.0.0"])
    assert "policy.mg-mc2-needs-tp-and-sp" in cli.output
    bad = run_cli("check", str(path), "--target", "megatron@1")
    assert bad.exit_code == 2 and "--target 'megatron@1'" in bad.stderr


def test_a_deprecation_holds_only_where_the_repositorys_sources_declare_it(tmp_path: Path):
    script = f"torchrun --nproc_per_node 8 pretrain_gpt.py {MEGATRON_ARGS} --use-mc2\n"
    sources = "mindspeed_llm/training/arguments.py"
    for name in ("v2.0.0", "v2.1.0", "user"):
        (tmp_path / name).mkdir()
    before = _write(
        tmp_path / "v2.0.0",  # --use-mc2 is the only MC2 flag
        {"pretrain.sh": script, sources: "group.add_argument('--use-mc2', action='store_true')\n"},
    )
    after = _write(
        tmp_path / "v2.1.0",  # deprecated for --use-ascend-mc2
        {
            "pretrain.sh": script,
            sources: "warn(\"'--use-mc2' is deprecated. Please use '--use-ascend-mc2' instead\")\n",
        },
    )
    plain = _write(tmp_path / "user", {"pretrain.sh": script})  # no checkout: the newest
    deprecated = "policy.mg-deprecated-flag"
    assert deprecated not in _ids(run_check(RULES, configs=[before / "pretrain.sh"]))
    assert deprecated in _ids(run_check(RULES, configs=[after / "pretrain.sh"]))
    assert deprecated in _ids(run_check(RULES, configs=[plain / "pretrain.sh"]))


def test_alltoall_overlap_with_tp_extend_ep_is_refused_from_2_2_only(tmp_path: Path):
    moe = (
        "--tensor-model-parallel-size 2 --moe-grouped-gemm --moe-token-dispatcher-type alltoall "
        "--moe-tp-extend-ep --moe-alltoall-overlap-comm --num-experts 8"
    )
    script = f"torchrun --nproc_per_node 8 pretrain_gpt.py {moe}\n"
    rule = "policy.mg-alltoall-overlap-needs"
    for release, refused in (("0.0.1", False), ("2.2.0", True), (None, True)):
        root = tmp_path / str(release)
        root.mkdir()
        files = {"pretrain.sh": script}
        if release is not None:  # 1.0.0-2.1.0 all say 0.0.1; no setup.py: the newest
            files["setup.py"] = f"__version__ = '{release}'\n__package_name__ = 'mindspeed_llm'\n"
        _write(root, files)
        found = rule in _ids(run_check(RULES, configs=[root / "pretrain.sh"]))
        assert found is refused, release


# ---------------------------------------------------------------- the upstream repositories


def test_upstream_corpus():
    """Per folder, as CI runs it, over the repositories benchmarks/corpus.py brings (set
    ADVISOR_CORPUS to their folder; skipped otherwise: it takes about two minutes)."""
    base = os.environ.get("ADVISOR_CORPUS")
    if not base or not Path(base).is_dir():
        pytest.skip("ADVISOR_CORPUS is not set (python -m benchmarks.corpus --into DIR)")
    for repo in sorted(p for p in Path(base).iterdir() if p.is_dir()):
        proc = subprocess.run(
            [sys.executable, "-m", "advisor", "check", ".", "--format", "sarif"],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode in (0, 1), (repo, proc.stderr[-2000:])
        results = json.loads(proc.stdout)["runs"][0]["results"]
        if repo.name.startswith("mindspeed-mm"):
            assert not [r for r in results if r["ruleId"].startswith("policy.config-")]
        for r in results:
            assert "| tee" not in r["message"]["text"] and "2>&1" not in r["message"]["text"]
