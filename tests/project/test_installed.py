"""The package stands alone: installed (not from the checkout) into a fresh virtual environment, `r2mad bench
--quick` runs from a folder outside the checkout. It fails where the library imports what it does not ship
(tests/, testing/) or reads a file the install lacks (configs)."""
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("pyproject.toml", "requirements.txt", "README.md", "configs", "r2mad")  # what a source distribution holds


def run(command: list, cwd: Path, timeout_s: float, **env: str) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True, timeout=timeout_s,
                          env={**os.environ, **env})
    assert done.returncode == 0, f"{' '.join(map(str, command))}:\n{(done.stdout + done.stderr)[-3000:]}"
    return done


@pytest.mark.slow  # a pip install and a quick bench: minutes on 2 cores
def test_an_installed_r2mad_runs_the_bench_outside_the_checkout(tmp_path):
    source, venv, away = tmp_path / "source", tmp_path / "venv", tmp_path / "away"
    source.mkdir()
    for name in SHIPPED:  # a copy: building in place would leave build/ in the checkout
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(ROOT / name, source / name)
    run([sys.executable, "-m", "venv", "--without-pip", venv], tmp_path, 120)
    python = venv / "bin" / "python"
    purelib = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path, 60)
    # this environment's packages (pip, setuptools and the dependencies) are seen from the new one: nothing is
    # downloaded; r2mad itself is not among them, so only the install below provides it
    Path(purelib.stdout.strip(), "dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", source], tmp_path, 600)
    away.mkdir()
    where = run([python, "-c", "import r2mad; print(r2mad.__file__)"], away, 60)
    assert where.stdout.startswith(str(venv))  # the installed copy, not the checkout
    shutil.rmtree(source)
    bench = run([venv / "bin" / "r2mad", "bench", "--quick"], away, 1200, R2MAD_DATA_DIR=str(away / "var"))
    for part in ("Debate figures", "Self-Consistency", "Crafted answers", "Retrieval"):
        assert part in bench.stdout
