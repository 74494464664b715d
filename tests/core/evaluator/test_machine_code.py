"""The machine-code digest: real cubins (tests/data/cubin, written by ptxas) that differ only in their line tables
digest alike, a changed instruction does not, and anything that is not a whole 64-bit ELF has no digest."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kernel_tui.core.evaluator.kernel_facts import DeviceLimits, facts_of
from kernel_tui.core.evaluator.machine_code import code_digest, elf_digest
from tests.conftest import DATA

CUBINS = DATA / "cubin"


def cubin(name: str) -> bytes:
    return (CUBINS / f"{name}.cubin").read_bytes()


def test_the_same_code_from_another_file_digests_alike_and_other_code_does_not():
    one_a, one_b, two_a = cubin("add_one_at_a"), cubin("add_one_at_b"), cubin("add_two_at_a")
    assert one_a != one_b  # the line table names another file: the bytes differ
    assert elf_digest(one_a) is not None
    assert elf_digest(one_a) == elf_digest(one_b)
    assert elf_digest(two_a) != elf_digest(one_a)  # adds 2.0, not 1.0


@pytest.mark.parametrize("broken", [
    b"", b"not an elf at all, but long enough to have a header" * 2,
    b"\x7fELF\x01\x01" + bytes(100),  # 32-bit
    b"\x7fELF\x02\x02" + bytes(100),  # big-endian
])
def test_what_is_not_a_whole_64_bit_elf_has_no_digest(broken):
    assert elf_digest(broken) is None


def test_a_cut_off_cubin_has_no_digest():
    data = cubin("add_one_at_a")
    assert elf_digest(data[: len(data) // 2]) is None


def test_kernel_facts_carry_the_digest_where_triton_kept_the_binary():
    def compiled(asm):
        return SimpleNamespace(n_regs=16, n_spills=0, asm=asm,
                               metadata=SimpleNamespace(name="add_kernel", shared=0, num_warps=4, num_stages=1))

    one_a, one_b = compiled({"cubin": cubin("add_one_at_a")}), compiled({"cubin": cubin("add_one_at_b")})
    assert code_digest(one_a) == elf_digest(cubin("add_one_at_a"))
    assert code_digest(compiled({"hsaco": cubin("add_two_at_a")})) == elf_digest(cubin("add_two_at_a"))
    assert code_digest(compiled({"ptx": "..."})) is None and code_digest(SimpleNamespace()) is None
    (a,) = facts_of({"add_kernel": SimpleNamespace(device_caches={0: ({"k": one_a},)})}, DeviceLimits())
    (b,) = facts_of({"add_kernel": SimpleNamespace(device_caches={0: ({"k": one_b},)})}, DeviceLimits())
    assert a.code is not None and a.code == b.code
    assert a.summary() == b.summary() == "add_kernel, 16 regs, 0.0 KiB shared, 4 warps, 1 stages, occupancy 100% (16 blocks/SM, threads)"
