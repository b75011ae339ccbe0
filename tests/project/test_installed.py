"""The package stands alone: installed (not from the checkout) into a fresh virtual environment, `r2mad bench
--quick` and `--grading` run from a folder outside the checkout. It fails where the library imports what it does
not ship (tests/, testing/) or reads a file the install lacks (configs, the demo questions, the demo banks, the
example cards, the hand-graded sets)."""
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# what a source distribution holds
SHIPPED = ("pyproject.toml", "requirements.txt", "README.md", "configs", "data", "memory", "r2mad", "tests/graded")
EXAMPLES = list((ROOT / "data" / "examples").glob("*.json"))  # the example cards


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
    grading = run([venv / "bin" / "r2mad", "bench", "--grading", "--quick"], away, 600)  # the shipped graded sets
    assert "mcq: agree with the hand verdict" in grading.stdout and "share/r2mad-studio/tests/graded" in grading.stdout
    # the demo questions, read on a scripted backbone from a config of the user's own
    configs = away / "configs"
    shutil.copytree(venv / "share" / "r2mad-studio" / "configs", configs)
    (configs / "backbones.yaml").write_text("default: mock\nbackbones:\n  mock: {kind: scripted, model: mock}\n")
    run([venv / "bin" / "r2mad", "--config-dir", configs, "eval", "--task", "demo-mcq", "--limit", "2",
         "--methods", "mad", "--out", away / "eval"], away, 600, R2MAD_DATA_DIR=str(away / "var"))
    assert len((away / "eval" / "rows.jsonl").read_text().splitlines()) == 2
    # the app's default bank and its example cards
    found = run([python, "-c", "from r2mad.settings.config import load_config; from r2mad.serving.shared import "
                 "Shared; from r2mad.ui.examples import CACHE; print(*Shared(load_config()).bank_choices(), "
                 "len(list(CACHE.glob('*.json'))))"], away, 120)
    assert found.stdout.split() == ["memory/demo-math", "memory/demo-mcq", str(len(EXAMPLES))]
