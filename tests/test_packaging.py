"""The source distribution carries everything the extension compiles from: setuptools adds the compiled files of
ext_modules by itself, but the headers (csrc/*.h, csrc/cuda/*.cuh) only through MANIFEST.in, and an sdist without
them fails to build on the user's machine."""

import pathlib
import shutil
import subprocess
import sys
import tarfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE_SUFFIXES = {".h", ".cuh", ".cpp", ".cu"}


@pytest.mark.skipif(not (ROOT / "setup.py").exists(), reason="not a source checkout")
def test_sdist_carries_every_source_file(tmp_path):
    work = tmp_path / "src"
    work.mkdir()
    for name in ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, work / name)
    shutil.copytree(ROOT / "csrc", work / "csrc")
    shutil.copytree(ROOT / "rtopk", work / "rtopk", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    out = subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(tmp_path / "dist")], cwd=work,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    (archive,) = (tmp_path / "dist").glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        packed = {pathlib.PurePosixPath(*pathlib.PurePosixPath(n).parts[1:]) for n in tar.getnames()}
    wanted = {pathlib.PurePosixPath(p.relative_to(ROOT).as_posix()) for p in (ROOT / "csrc").rglob("*")
              if p.suffix in SOURCE_SUFFIXES}
    assert wanted, "no sources found under csrc/"
    missing = sorted(str(p) for p in wanted - packed)
    assert not missing, f"missing from the sdist: {missing}"
