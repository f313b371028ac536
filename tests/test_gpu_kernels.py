"""GPU kernel analyses: fp32 GEMMs on the CUDA cores and launch storms, on the example and the
real traces under ../shared/real."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.app.diagnose import run_diagnose
from advisor.app.job import JobOptions
from advisor.app.pipeline import profile_facts
from advisor.inputs.taxonomy import default_taxonomy
from tests.conftest import REAL

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "profiles" / "step-phases"


@pytest.mark.parametrize(
    ("kernel", "cuda_core"),
    [
        ("volta_sgemm_128x32_nt", True),
        ("ampere_sgemm_128x64_tn", True),
        ("implicit_convolve_sgemm", True),
        ("cutlass_simt_sgemm_128x128_8x2_nn_align1", True),
        ("cutlass_80_tensorop_s1688gemm_128x64_32x6_nt_align1", False),
        ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw", False),
        ("ampere_h16816gemm_256x128_ldg8_stages_32x3_nn", False),
        ("cutlass_simt_hgemm_256x128_8x2_nn_align1", False),
        # ROCm: Tensile / hipBLASLt names carry the data type after the two index orders
        ("Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0_AFC1", True),
        ("Cijk_Ailk_Bjlk_S_MT64x64x16_SN_K1", True),
        ("Cijk_Ailk_Bljk_BBS_BH_MT32x32x64_MI16x16x16x1_SN_1LDSB0_APM1", False),
        ("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN", False),
        ("igemm_fwd_gtcx3_nhwc_fp32_bx0_ex1_bt128x128x32_wt32x32x8", True),
        ("igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1", False),
    ],
)
def test_kernel_names_tell_the_cuda_cores_from_the_tensor_cores(kernel: str, cuda_core: bool):
    classes = default_taxonomy().op_class(kernel, kernel)
    assert "matmul" in classes
    assert ("cuda_core_gemm" in classes) is cuda_core


def test_the_example_runs_its_gemms_on_the_cuda_cores():
    facts = profile_facts(EXAMPLE)
    assert facts.value("ops.cuda_core_gemm_share") == 1.0
    assert facts.value("ops.cuda_core_gemm_ms_per_step") == pytest.approx(18.0)
    assert facts.value("ops.tiny_kernels_per_step") == 240  # the unfused AdamW's kernels


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real is not beside the checkout")
@pytest.mark.parametrize(
    ("trace", "low", "high"),
    [
        ("kineto/df_index_resolver__df_index_resolver.json.gz", 0.99, 1.0),  # V100, volta_sgemm
        ("kineto/trace_diff__control__control.json.gz", 0.05, 0.2),  # mostly s1688 tensorop
        ("kineto/nccl_parser_config__nccl_data.json.gz", 0.0, 0.01),  # cuDNN tf32 convolutions
    ],
)
def test_real_traces_gemm_precision(trace: str, low: float, high: float):
    facts = profile_facts(REAL / trace)
    assert low <= facts.value("ops.cuda_core_gemm_share") <= high


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real is not beside the checkout")
def test_a_launch_storm_is_named_where_the_device_waits_for_launches():
    facts = profile_facts(REAL / "kineto" / "df_index_resolver__df_index_resolver.json.gz")
    assert facts.value("ops.tiny_kernel_share") > 0.8
    assert facts.value("host.dispatch_bound_ratio") > 0.3
    ascend = profile_facts(REAL / "ascend-ddp-2rank-text")
    assert any(
        m.id == "ops.cuda_core_gemm_share" and "cube unit" in m.reason for m in ascend.missing
    )


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real is not beside the checkout")
def test_fp32_gemms_lead_the_compute_bottleneck_by_their_time_and_get_the_tensor_cores():
    """trace_diff's test side runs 97% of its GEMM time (33 ms of a 113 ms step) in sgemm:
    that time, not the small vector kernels, leads, and the remedy is the tensor cores, its
    ceiling the fp32 GEMM time."""
    run = run_diagnose(JobOptions(profile=REAL / "kineto" / "trace_diff__test__test.json.gz"))
    facts = run.facts
    gemm = facts.value("ops.gemm_ratio")
    assert 0.25 <= gemm <= 0.35
    main = run.diagnosis.main
    assert main is not None and main.id == "bottleneck.compute"
    assert "symptom.cuda-core-gemm" in main.evidence
    # the cost is the fp32 GEMM time beyond the fine share, as a share of the step
    fp32 = facts.value("ops.cuda_core_gemm_share")
    assert main.cost_ratio == pytest.approx((fp32 - 0.1) * gemm, abs=0.01)


def _real(name: str) -> Path:
    path = REAL / name
    if not path.exists():
        pytest.skip(f"{path} is absent: ../shared is not beside the checkout")
    return path


def test_rocm_tensile_kernels_are_gemms_and_their_fp32_ones_are_told_apart():
    """The MI250 toy trains in fp32: its two hipBLASLt GEMMs are Cijk_..._SB_ (fp32 data);
    the MI300 ResNet runs bf16 (Cijk_..._BBS_, MIOpen bf16 igemm): GEMMs, none of them fp32."""
    toy = profile_facts(_real("kineto/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"))
    assert toy.value("profile.platform") == "rocm"
    assert toy.value("ops.cuda_core_gemm_share") == 1.0
    assert toy.value("ops.cuda_core_gemm_ms_per_step") == pytest.approx(0.03, abs=0.005)
    resnet = profile_facts(_real("kineto-rocm/mi300__resnet_act_checkpoint.json.gz"))
    assert resnet.value("ops.cuda_core_gemm_share") == 0.0
    # the Tensile kernels count among the GEMMs (they carry no "gemm" in their names)
    assert resnet.value("ops.gemm_ratio") > 0.05
    run = run_diagnose(
        JobOptions(profile=_real("kineto/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"))
    )
    assert "symptom.cuda-core-gemm" in {s.id for s in run.diagnosis.symptoms}
