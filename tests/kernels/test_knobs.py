import pytest

from autotile.kernels import (
    FLASH_KNOBS,
    KERNELS,
    MATMUL_KNOBS,
    SOFTMAX_FUSED_KNOBS,
    Constraint,
    KernelKnobs,
)


def test_matmul_knob_choices_are_the_brief():
    assert MATMUL_KNOBS.knobs["BLOCK_M"] == (16, 32, 64, 128, 256)
    assert MATMUL_KNOBS.knobs["BLOCK_K"] == (16, 32, 64, 128)
    assert MATMUL_KNOBS.knobs["GROUP_M"] == (1, 2, 4, 8, 16, 32, 64)
    assert MATMUL_KNOBS.knobs["num_warps"] == (2, 4, 8)
    assert MATMUL_KNOBS.knobs["num_stages"] == (2, 3, 4, 5)
    assert MATMUL_KNOBS.n_configs == 5 * 5 * 4 * 7 * 3 * 4


def test_matmul_constraints_name_the_rule():
    shape = {"M": 512, "N": 512, "K": 512}
    ok = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=4, num_warps=4, num_stages=3)
    assert MATMUL_KNOBS.violated(dict(ok, GROUP_M=8), shape) == ("group_m_le_tile_rows",)
    # 3 tile rows: every GROUP_M >= 3 is column-major; the space keeps 4, the next power of 2.
    rows3 = {"M": 384, "N": 512, "K": 512}
    assert MATMUL_KNOBS.is_valid(dict(ok, GROUP_M=4), rows3)
    assert MATMUL_KNOBS.violated(dict(ok, GROUP_M=8), rows3) == ("group_m_le_tile_rows",)
    assert MATMUL_KNOBS.is_valid(ok, shape)
    too_big = dict(ok, BLOCK_M=256, BLOCK_N=256, BLOCK_K=128, GROUP_M=2, num_stages=5)
    assert MATMUL_KNOBS.violated(too_big, shape) == ("smem_fits",)
    assert MATMUL_KNOBS.violated(dict(ok, BLOCK_M=48), shape) == ("choice:BLOCK_M",)
    small = {"M": 20, "N": 512, "K": 512}
    assert "block_m_le_padded_m" in MATMUL_KNOBS.violated(ok, small)


def test_fused_softmax_block_must_cover_row():
    shape = {"M": 1823, "N": 781}
    assert SOFTMAX_FUSED_KNOBS.is_valid({"BLOCK_SIZE": 1024, "num_warps": 4}, shape)
    assert SOFTMAX_FUSED_KNOBS.violated({"BLOCK_SIZE": 512, "num_warps": 4}, shape) == (
        "block_covers_row", "block_is_next_pow2")


def test_flash_onchip_constraint():
    shape = {"N": 4096, "d": 128}
    assert FLASH_KNOBS.is_valid({"BLOCK_M": 256, "BLOCK_N": 64, "num_warps": 8,
                                 "num_stages": 2}, shape)
    assert "onchip_fits" in FLASH_KNOBS.violated(
        {"BLOCK_M": 256, "BLOCK_N": 128, "num_warps": 8, "num_stages": 2}, shape)
    # 64 x 128 tiles launch (tutorial 06 lists them): no divisibility rule
    assert FLASH_KNOBS.is_valid({"BLOCK_M": 64, "BLOCK_N": 128, "num_warps": 4,
                                 "num_stages": 3}, shape)


def test_registry_entries_are_complete():
    assert set(KERNELS) == {
        "vector_add", "softmax_naive", "softmax_fused", "matmul", "matmul_persistent",
        "matmul_descriptor_persistent", "flash_attention", "layer_norm", "l2_norm", "swiglu",
    }
    for name, info in KERNELS.items():
        assert info.name == name
        assert callable(info.launcher) and callable(info.reference)
        assert info.knobs.kernel is not None
        assert info.knobs.names
    with pytest.raises(TypeError):
        KERNELS["x"] = None  # type: ignore[index]


def test_knobs_validation_and_hash():
    with pytest.raises(ValueError, match="at least one choice"):
        KernelKnobs(kernel=None, knobs={"A": ()})
    c = Constraint("a", lambda cfg, s: True)
    with pytest.raises(ValueError, match="unique"):
        KernelKnobs(kernel=None, knobs={"A": (1,)}, constraints=(c, c))
    k1 = KernelKnobs(kernel=None, knobs={"A": [1, 2]})
    k2 = KernelKnobs(kernel=None, knobs={"A": (1, 2)})
    assert k1 == k2 and hash(k1) == hash(k2)
    assert k1.knobs["A"] == (1, 2)


def test_group_m_above_the_tile_rows_is_canonicalised_not_refused():
    from autotile.kernels import MATMUL_PERSISTENT_KNOBS, canonical_group_m

    tut = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=3)
    small = {"M": 256, "N": 4096, "K": 4096}  # 2 tile rows: GROUP_M 8 runs as 2
    assert MATMUL_KNOBS.violated(tut, small) == ("group_m_le_tile_rows",)
    assert canonical_group_m(tut, small) == dict(tut, GROUP_M=2)
    assert MATMUL_KNOBS.is_valid(MATMUL_KNOBS.canonical_config(tut, small), small)
    # 3 tile rows: every GROUP_M >= 3 is column-major, the space's one is 4
    assert canonical_group_m(tut, {"M": 384})["GROUP_M"] == 4
    assert canonical_group_m(dict(tut, GROUP_M=64), {"M": 300})["GROUP_M"] == 4
    # below the tile rows nothing changes, and the input is not modified
    assert canonical_group_m(tut, {"M": 8192}) == tut
    assert canonical_group_m(dict(tut, GROUP_M=2), {"M": 384})["GROUP_M"] == 2
    assert tut["GROUP_M"] == 8
    # malformed configs are left for the constraints to refuse
    assert canonical_group_m({"BLOCK_M": 0, "GROUP_M": 8}, small) == {"BLOCK_M": 0, "GROUP_M": 8}
    assert canonical_group_m({"GROUP_M": 8}, small) == {"GROUP_M": 8}
    persistent = dict(tut, NUM_SMS=132)
    assert MATMUL_PERSISTENT_KNOBS.canonical_config(persistent, small)["GROUP_M"] == 2
    # knobs without a rule return a copy
    assert SOFTMAX_FUSED_KNOBS.canonical_config({"BLOCK_SIZE": 1024}, {}) == {"BLOCK_SIZE": 1024}
    with pytest.raises(TypeError, match="canonical must be callable"):
        KernelKnobs(kernel=None, knobs={"B": (1,)}, canonical=3)  # type: ignore[arg-type]
