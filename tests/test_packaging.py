"""The distribution ``infill-mcmc`` builds as a wheel and an sdist, and the wheel installed into a fresh venv
gives the ``infill`` command (the venv sees this Python's packages, so torch is not installed again)."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_and_sdist_build_and_the_wheel_installs(tmp_path):
    pytest.importorskip("build", reason="the packaging test needs `build` (pip install build)")
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(ROOT)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    (wheel,) = dist.glob("infill_mcmc-*.whl")
    (sdist,) = dist.glob("infill_mcmc-*.tar.gz")
    names = zipfile.ZipFile(wheel).namelist()
    assert "infill/serve/static/index.html" in names and "infill/cli/__init__.py" in names
    assert not any(name.startswith("tests/") for name in names)
    assert any(name.endswith("infill/serve/static/index.html") for name in tarfile.open(sdist).getnames())

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
    )
    where = subprocess.run(
        [
            str(python),
            "-c",
            "import infill, importlib.metadata as m; print(infill.__file__); print(m.version('infill-mcmc'))",
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout.split()
    assert where[0].startswith(str(venv)) and where[1] == "0.1.0"  # the wheel's copy, not this checkout
    help_ = subprocess.run([str(venv / "bin" / "infill"), "--help"], capture_output=True, text=True, cwd=tmp_path)
    assert help_.returncode == 0 and "serve" in help_.stdout and "score" in help_.stdout
