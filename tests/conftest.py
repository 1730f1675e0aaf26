import math
import os
import shutil
import subprocess
import tempfile
import threading

import pytest
import torch

import rtopk  # noqa: F401  (registers torch.ops.rtopk)
from rtopk._ref import int_view

HAS_CUDA = torch.cuda.is_available()
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device"))]
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]

# The warp emulators (tests/emu: CUDA kernels compiled for the CPU by g++), where g++ and the CUDA headers are
# found and no GPU is (RTOPK_EMU=1: also with one; where a GPU runs the kernels themselves they only cost time).
HERE = os.path.dirname(os.path.abspath(__file__))
CUDA_INCLUDE = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "include")
EMU_TOOLS = shutil.which("g++") is not None and os.path.exists(os.path.join(CUDA_INCLUDE, "cuda_fp16.h"))
EMU_WANTED = not HAS_CUDA or os.environ.get("RTOPK_EMU", "0") == "1"
EMU_MODULES = {"test_lane_emu": "lane_emu", "test_small_emu": "small_emu", "test_emu_selfcheck": "emu_selfcheck",
               "test_pair_emu": "pair_emu"}


class _EmuBuilds:
    """Each emulator compiled once a session.  Where the collected tests use them, a thread compiles them from the
    end of collection on, one at a time, beside the tests before them (which keep one core busy): most of their
    minutes of g++ leave the serial run (CI's two cores)."""

    def __init__(self):
        self.dir = None
        self.builds = {}  # name -> (event, [exe or error])
        self.lock = threading.Lock()

    def _compile(self, name, done, out):
        exe = os.path.join(self.dir, name)
        cmd = ["g++", "-std=c++20", "-O1", "-I", CUDA_INCLUDE, os.path.join(HERE, "emu", name + ".cpp"), "-o", exe]
        run = subprocess.run(cmd, capture_output=True, text=True)
        out.append(exe if run.returncode == 0 else RuntimeError(f"g++ failed for {name}: {run.stderr[-4000:]}"))
        done.set()

    def _schedule(self, names):
        """(lock held) The names not yet scheduled, each with its event."""
        if self.dir is None:
            self.dir = tempfile.mkdtemp(prefix="rtopk_emu_")
        new = []
        for n in names:
            if n not in self.builds:
                self.builds[n] = (threading.Event(), [])
                new.append(n)
        return new

    def start(self, names):
        with self.lock:
            new = self._schedule(names)

        def run():
            for n in new:
                self._compile(n, *self.builds[n])

        if new:
            threading.Thread(target=run, daemon=True).start()

    def get(self, name):
        with self.lock:
            new = self._schedule([name])
        if new:
            self._compile(name, *self.builds[name])
        done, out = self.builds[name]
        done.wait()
        if isinstance(out[0], Exception):
            raise out[0]
        return out[0]

    def close(self):
        # (Not waiting for a build no test asked for: an interrupted run exits at once.)
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)


EMU_BUILDS = _EmuBuilds()


@pytest.hookimpl(trylast=True)  # (after -k / -m deselection)
def pytest_collection_modifyitems(config, items):
    if not (EMU_TOOLS and EMU_WANTED):
        return

    def emulator(item):  # the emulator an item's module runs, or None
        mod = getattr(item, "module", None)
        return EMU_MODULES.get(mod.__name__ if mod is not None else "")

    names = list(dict.fromkeys(n for n in map(emulator, items) if n))
    if names:
        EMU_BUILDS.start(names)
        # The emulated tests last (a stable sort: in their order), so that their compiles finish beside the others
        # instead of holding up the run (CI: ~60 s waited on lane_emu's g++ when its tests ran in file order).
        items.sort(key=lambda item: emulator(item) is not None)


def pytest_unconfigure(config):
    EMU_BUILDS.close()


@pytest.fixture(autouse=True, scope="session")
def poison_outputs():
    """Outputs are pre-filled with NaN / -1 inside the op, so any unwritten slot fails a test."""
    torch.ops.rtopk._set_debug_poison(True)
    yield
    torch.ops.rtopk._set_debug_poison(False)


def make_rows(kind, shape, dtype, device, gen):
    """Real random data of one kind (never zeros), built in float64 and cast once.  "mixed": each row (the last
    dimension) of its own kind, so that rows of different kinds share a kernel's warp or block."""
    n = 1
    for s in shape:
        n *= s
    if kind == "mixed":
        m = shape[-1] if len(shape) else 1
        rows = n // m if m else 0
        parts = torch.stack([make_rows(kd, (rows, m), dtype, "cpu", gen) for kd in MIXED_KINDS])
        pick = torch.randint(0, len(MIXED_KINDS), (1, rows, 1), generator=gen).expand(1, rows, m)
        return parts.gather(0, pick)[0].reshape(shape).to(device)
    fi = torch.finfo(dtype)
    u = torch.rand(n, generator=gen, dtype=torch.float64)
    sign = torch.where(torch.rand(n, generator=gen) < 0.5, -1.0, 1.0).double()
    if kind == "randn":
        x = torch.randn(n, generator=gen, dtype=torch.float64)
    elif kind == "uniform":
        x = u
    elif kind == "ties":
        x = torch.randint(0, 4, (n,), generator=gen).double()
    elif kind == "equal":
        x = torch.full((n,), 3.25, dtype=torch.float64)
    elif kind == "signed_zeros":
        x = torch.where(u < 0.7, 0.0 * sign, torch.randint(-2, 3, (n,), generator=gen).double())
    elif kind == "inf":
        x = torch.randn(n, generator=gen, dtype=torch.float64)
        x = torch.where(u < 0.1, float("inf"), torch.where(u > 0.9, float("-inf"), x))
    elif kind == "nan":
        x = torch.randn(n, generator=gen, dtype=torch.float64)
        x = torch.where(u < 0.15, float("nan") * sign, torch.where(u > 0.95, float("inf") * sign, x))
    elif kind == "mostly_nan":  # the k smallest reach the NaN too (they rank after every value)
        x = torch.randn(n, generator=gen, dtype=torch.float64)
        x = torch.where(u < 0.9, float("nan") * sign, torch.where(u > 0.97, float("inf") * sign, x))
    elif kind == "all_nan":
        x = torch.full((n,), float("nan"), dtype=torch.float64) * sign
    elif kind == "neg_inf_heavy":
        x = torch.randn(n, generator=gen, dtype=torch.float64)
        x = torch.where(u < 0.6, float("-inf"), x)
    elif kind == "near_max":
        x = fi.max * (0.5 + 0.5 * u) * sign
    elif kind == "denormal":
        x = fi.smallest_normal * u * sign
    elif kind == "few_ulps":
        x = 1.0 + fi.eps * torch.randint(0, 5, (n,), generator=gen).double()
    elif kind in ("ascending", "descending"):
        x = torch.arange(n, dtype=torch.float64) % shape[-1] + u * 0.25
        x = x if kind == "ascending" else -x
    elif kind == "heavy_tail":
        x = torch.randn(n, generator=gen, dtype=torch.float64) ** 5
    elif kind == "outliers":  # a few huge values of either sign: the rest crowd together
        x = torch.randn(n, generator=gen, dtype=torch.float64)
        x = torch.where(u < 0.02, x * min(1e20, fi.max / 8), x)
    # Heavy tails around 0 (the lane kernel maps their warps by the values' keys, not linearly):
    elif kind == "cube":
        x = torch.randn(n, generator=gen, dtype=torch.float64) ** 3
    elif kind == "lognormal":  # positive only: keys from the smallest to the largest magnitude
        x = torch.exp(min(3.0, math.log(fi.max) / 12) * torch.randn(n, generator=gen, dtype=torch.float64))
    elif kind == "cauchy":
        x = torch.tan(math.pi * (u - 0.5)).clamp(-fi.max / 4, fi.max / 4)
    elif kind == "heavy_ties":  # randn^5 rounded to quarters: ties at the k-th value
        x = torch.round(torch.randn(n, generator=gen, dtype=torch.float64) ** 5 * 4) / 4
    elif kind == "heavy_tiny":  # randn^5 in the subnormal range (and flushed to 0 below it)
        x = torch.randn(n, generator=gen, dtype=torch.float64) ** 5 * fi.smallest_normal / 64
    elif kind == "heavy_huge":  # randn^5 whose range passes float's largest value
        x = (torch.randn(n, generator=gen, dtype=torch.float64) ** 5 * (fi.max / 300)).clamp(-fi.max, fi.max)
    else:
        raise ValueError(kind)
    return x.to(dtype).reshape(shape).to(device)


KINDS = ["randn", "uniform", "ties", "equal", "signed_zeros", "inf", "nan", "all_nan", "neg_inf_heavy", "near_max",
         "denormal"]
MIXED_KINDS = KINDS + ["few_ulps", "heavy_tail", "outliers", "ascending", "mostly_nan"]
TAIL_KINDS = ["heavy_tail", "outliers", "cube", "lognormal", "cauchy", "heavy_ties", "heavy_tiny", "heavy_huge"]


def bits(t):
    """Integer view of a floating tensor, for bit-exact comparisons (NaN payloads, -0.0)."""
    return int_view(t)


def check_invariants(x, k, values, indices, ctx=""):
    """What every mode guarantees: k distinct in-range indices in ascending order, values gathered."""
    assert values.dtype == x.dtype and indices.dtype == torch.int64, ctx
    shape = tuple(x.shape[:-1]) + (k,) if x.dim() else ()
    assert tuple(values.shape) == shape and tuple(indices.shape) == shape, ctx
    if x.dim() == 0 or k == 0 or x.numel() == 0:
        return
    M = x.shape[-1]
    assert int(indices.min()) >= 0 and int(indices.max()) < M, f"index out of range {ctx}"
    if k > 1:
        assert bool((indices[..., 1:] > indices[..., :-1]).all()), f"indices not strictly ascending {ctx}"
    # Gather on the integer view: torch's bf16 gather rewrites NaN payloads.
    assert torch.equal(bits(values), bits(x).gather(-1, indices)), f"values != input[indices] {ctx}"


def check_matches_ref(x, k, ctx):
    """rtopk.rtopk(x, k) against the plain-torch reference, bit for bit, plus the invariants."""
    values, indices = rtopk.rtopk(x, k)
    check_invariants(x, k, values, indices, ctx)
    ref_v, ref_i = rtopk.rtopk_ref(x, k)
    assert torch.equal(indices, ref_i), f"indices differ from reference: {ctx}"
    assert torch.equal(bits(values), bits(ref_v)), f"values differ from reference: {ctx}"
