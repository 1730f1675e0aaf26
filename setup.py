"""Build script for rtopk: the C++ library always, the CUDA kernels when torch has CUDA and nvcc is found."""

import glob
import os
import sys

from setuptools import find_packages, setup
from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def want_cuda():
    if os.environ.get("RTOPK_FORCE_CPU", "0") == "1":
        return False
    return torch.version.cuda is not None and CUDA_HOME is not None


def default_arch_list():
    # With no GPU visible torch would target every arch the toolkit knows; pick a sensible set
    # (Ampere, Hopper, Blackwell, plus PTX for newer chips) unless the user chose one.
    if "TORCH_CUDA_ARCH_LIST" not in os.environ and not torch.cuda.is_available():
        os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0;9.0;10.0;12.0+PTX"


def extensions():
    csrc = os.path.join("csrc")
    sources = sorted(glob.glob(os.path.join(csrc, "*.cpp")))
    # py_limited_api=True makes torch define Py_LIMITED_API; the module only uses the stable ABI.
    cxx = ["-O3", "-ffp-contract=off"]
    link = []
    if sys.platform.startswith("linux") and "OpenMP" in torch.__config__.parallel_info():
        # at::parallel_for is inlined here, and runs its rows on one thread unless this file is
        # built with OpenMP (libgomp.so.1: the one torch has loaded already).
        cxx.append("-fopenmp")
        link.append("-fopenmp")
    if not want_cuda():
        return [
            CppExtension(
                "rtopk._C", sources, extra_compile_args={"cxx": cxx}, extra_link_args=link, py_limited_api=True
            )
        ]
    default_arch_list()
    sources += sorted(glob.glob(os.path.join(csrc, "cuda", "*.cpp")))
    sources += sorted(glob.glob(os.path.join(csrc, "cuda", "*.cu")))
    sources += sorted(glob.glob(os.path.join(csrc, "cuda", "inst", "*.cu")))
    nvcc = ["-O3", "-lineinfo", "--expt-relaxed-constexpr"]
    if os.environ.get("RTOPK_PTXAS_VERBOSE", "0") == "1":
        nvcc.append("-Xptxas=-v")
    return [
        CUDAExtension(
            "rtopk._C",
            sources,
            extra_compile_args={"cxx": cxx + ["-DRTOPK_WITH_CUDA"], "nvcc": nvcc},
            extra_link_args=link,
            py_limited_api=True,
        )
    ]


setup(
    packages=find_packages(include=["rtopk", "rtopk.*"]),
    ext_modules=extensions(),
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
