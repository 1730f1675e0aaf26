"""The warp emulator itself (tests/emu/warp_emu.h, under tests/test_lane_emu.py and tests/test_small_emu.py): its
collectives give each lane what the GPU gives, with full and partial masks and values live across its fiber
switches, and it aborts, naming the rule, on each misuse a kernel could make (a lane that ends while others wait at a
collective, lanes of one mask at different collectives, a shuffle from outside the mask, collectives that can never
complete). Runs where the other emulator tests do."""

import subprocess

import pytest

from conftest import EMU_BUILDS, EMU_TOOLS, EMU_WANTED

pytestmark = [
    pytest.mark.skipif(not EMU_TOOLS, reason="needs g++ and the CUDA headers"),
    pytest.mark.skipif(not EMU_WANTED, reason="a GPU is present (RTOPK_EMU=1 runs the emulator anyway)"),
]


@pytest.fixture(scope="module")
def selfcheck():
    return EMU_BUILDS.get("emu_selfcheck")


def run(exe, case):
    return subprocess.run([exe, case], capture_output=True, text=True, timeout=60)


def test_collectives_give_what_the_gpu_gives(selfcheck):
    r = run(selfcheck, "ok")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@pytest.mark.parametrize(
    "case, message",
    [
        ("early_exit", "a lane ended while others wait at a warp collective"),
        ("mixed_ops", "lanes of one mask at different warp collectives"),
        ("shfl_outside", "a shuffle reads a lane outside its mask"),
        ("stuck", "no warp collective can complete"),
    ],
)
def test_misuse_aborts(selfcheck, case, message):
    r = run(selfcheck, case)
    assert r.returncode != 0 and "not caught" not in r.stdout, f"{case}: the emulator went on"
    assert message in r.stderr, r.stderr
