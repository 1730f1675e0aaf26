"""The look-ahead of csrc/rtopk_algo.h (a row that counts the next search steps' thresholds in one pass: the CUDA
block kernel's rows past its shared cache) on the CPU: tests/emu/look_ahead_check.cpp runs make_plan with and without
it over rows of many kinds, both directions, every mode, and fails on a different plan, a count outside the announced
thresholds (past those the protocol names) or a batch announced before the last one's steps ran out.  The CUDA side is
tests/test_block_rows.py.  Needs g++."""

import os
import re
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_look_ahead_protocol(tmp_path):
    exe = str(tmp_path / "look_ahead_check")
    src = os.path.join(HERE, "emu", "look_ahead_check.cpp")
    subprocess.run(["g++", "-std=c++17", "-O1", "-I", os.path.join(HERE, "..", "csrc"), src, "-o", exe], check=True)
    run = subprocess.run([exe], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    m = re.search(r"OK plans=(\d+) passes_plain=(\d+) passes_ahead=(\d+)", run.stdout)
    assert m, run.stdout
    plans, plain, ahead = map(int, m.groups())
    assert plans > 10000
    # Four steps a pass: the searches' count passes fall to well under half.
    assert ahead * 2 < plain, run.stdout
