"""The docs' examples stay true. Every fenced block of README.md and docs/*.md is read:
- ```bash blocks are examples: each `python -m r2mad ...` command in one parses with the CLI's own parser
  (fast tier), and a page's bash blocks run in order in one shell (slow tier);
- ```python blocks compile (fast) and run (slow);
- a block after `<!-- docs-test: not run (why) -->` is only parsed or compiled; after
  `<!-- docs-test: app (...) -->` it runs against the app, served for it, at the served address;
- ```text, ```yaml and ```json blocks are shown as they are.
Every relative link (and its #anchor) resolves, and every docs page is linked from the README.
The slow runs serve every backbone of configs/backbones.yaml by the scripted server, so they are offline and
quick: they test that the documented commands and calls work as written, not what a model would answer."""
from __future__ import annotations

import os
import re
import select
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from r2mad.cli import build_parser
from tests.helpers import child

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
KINDS = {"bash", "python", "text", "yaml", "json"}
FENCE = re.compile(r"^```(\S*)\n(.*?)^```$", re.S | re.M)
MARKER = re.compile(r"<!-- docs-test: (not run|app) \(([^)]+)\) -->\s*$")
SEPARATORS = {"|", "||", "&&", ";", "&", ")", "(", "$("}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    kind: str
    code: str
    marker: str  # "", "not run" or "app"

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.search(before)
        found.append(Block(page, text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2),
                           marker.group(1) if marker else ""))
    return found


ALL = [b for page in PAGES for b in blocks(page)]


def commands(code: str) -> list[list[str]]:
    """The argument lists of every `python -m r2mad` command in a shell block (continuations joined)."""
    found = []
    for line in code.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
        for i in range(len(words) - 2):
            if words[i:i + 3] == ["python", "-m", "r2mad"]:
                rest = words[i + 3:]
                ends = [j for j, w in enumerate(rest) if w in SEPARATORS]
                found.append(rest[:ends[0]] if ends else rest)
    return found


COMMANDS = [pytest.param(argv, id=f"{b.name}:{' '.join(argv)[:50]}")
            for b in ALL if b.kind == "bash" for argv in commands(b.code)]


def test_the_docs_have_runnable_examples_of_every_kind():
    kinds = {(b.kind, b.marker) for b in ALL}
    assert {("bash", ""), ("python", ""), ("python", "app"), ("bash", "not run")} <= kinds
    assert len(COMMANDS) >= 20


@pytest.mark.parametrize("block", ALL, ids=lambda b: b.name)
def test_every_block_says_what_kind_it_is(block):
    assert block.kind in KINDS, f"{block.name}: fence a block as one of {sorted(KINDS)}"
    if block.marker:
        assert block.kind in ("bash", "python"), f"{block.name}: a docs-test marker stands before an example"


@pytest.mark.parametrize("argv", COMMANDS)
def test_every_documented_command_parses(argv):
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse's way of refusing (2) or of printing --help (0)
        assert exc.code == 0 and "--help" in argv, f"`python -m r2mad {shlex.join(argv)}` does not parse"
    else:
        assert args.command == argv[argv.index(args.command)]


@pytest.mark.parametrize("block", [b for b in ALL if b.kind == "python"], ids=lambda b: b.name)
def test_every_python_example_compiles(block):
    compile(block.code, block.name, "exec")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def links(page: Path) -> list[str]:
    prose = FENCE.sub("", page.read_text())
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", prose) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page):
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        assert file.exists(), f"{page.name} links to {target}, which does not exist"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", FENCE.sub("", file.read_text()), re.M)
            assert anchor in {slug(h) for h in headings}, f"{page.name} links to #{anchor}, no such heading"


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in links(ROOT / "README.md")}
    assert [p.name for p in PAGES[1:] if p.resolve() not in linked] == []


def test_the_readme_layout_names_every_package_and_only_files_that_exist():
    layout = ROOT.joinpath("README.md").read_text().split("## Layout", 1)[1].split("\n## ", 1)[0]
    named = [n for row in re.findall(r"^\| (.+?) \|", layout, re.M) for n in re.findall(r"`([^`]+)`", row)]
    assert [n for n in named if not (ROOT / "r2mad" / n).exists()] == []
    packages = sorted(f"{p.parent.name}/" for p in (ROOT / "r2mad").glob("*/__init__.py"))
    assert [p for p in packages if p not in named] == []


# --- running the examples (slow) ------------------------------------------------------------------

@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    """A copy of configs/ whose every backbone, by its own name, is the scripted server."""
    from testing.scripted_server import FakeServer, ok

    folder = tmp_path_factory.mktemp("docs") / "configs"
    with FakeServer(models=["fake-model"], responder=lambda body: ok("Checked it twice. ((B))")) as server:
        shutil.copytree(ROOT / "configs", folder)
        real = yaml.safe_load((ROOT / "configs" / "backbones.yaml").read_text())
        real["backbones"] = {name: {"label": f"{name} (scripted)", "base_url": server.base_url,
                                    "model": "fake-model", "timeout_s": 30, "max_retries": 0}
                             for name in real["backbones"]}
        (folder / "backbones.yaml").write_text(yaml.safe_dump(real))
        yield folder


def environment(tmp_path) -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "R2MAD_DATA_DIR": str(tmp_path / "var"),
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


@pytest.fixture(scope="module")
def cli_socket(tmp_path_factory):
    """tests/cli_zygote.py serving `python -m r2mad` commands (the CLI imported once, a fork per command)."""
    folder = tmp_path_factory.mktemp("cli")
    path = folder / "cli.sock"
    server = child([sys.executable, "-m", "tests.cli_zygote", str(path)], cwd=ROOT,
                              env=environment(folder), stdout=subprocess.PIPE, text=True)
    try:
        waited = select.select([server.stdout], [], [], 120)[0]  # its imports, on a busy machine
        assert waited and server.stdout.readline().strip() == "ready", "the CLI server did not start in 120 s"
        yield path
    finally:
        server.kill()
        server.wait(timeout=10)


RUN_BASH = [p for p in PAGES if any(b.kind == "bash" and not b.marker for b in blocks(p))]


@pytest.mark.slow
@pytest.mark.parametrize("page", RUN_BASH, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_page_s_shell_examples_run(page, scripted, cli_socket, tmp_path):
    from tests.cli_zygote import CLIENT

    # `python -m r2mad` reads the scripted configs and notes that it ran; any other python is this interpreter
    py = shlex.quote(sys.executable)
    preamble = (f'python() {{ if [ "$1" = -m ] && [ "$2" = r2mad ]; then shift 2; echo "$1" >> ran.txt; '
                f'{py} -S -c {shlex.quote(CLIENT)} --config-dir {shlex.quote(str(scripted))} "$@"; '
                f'else {py} "$@"; fi; }}\nset -eo pipefail\n')
    run = [b for b in blocks(page) if b.kind == "bash" and not b.marker]
    done = subprocess.run(["bash", "-c", preamble + "\n".join(b.code for b in run)], cwd=tmp_path,
                          env={**environment(tmp_path), "R2MAD_CLI_SOCKET": str(cli_socket)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{page.name}'s examples failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    documented = [argv[0] for b in run for argv in commands(b.code)]
    assert (tmp_path / "ran.txt").read_text().split() == documented  # every command ran, in order


@pytest.mark.slow
@pytest.mark.parametrize("block", [b for b in ALL if b.kind == "python" and not b.marker], ids=lambda b: b.name)
def test_a_python_example_runs(block, tmp_path):
    done = subprocess.run([sys.executable, "-c", block.code], cwd=tmp_path, env=environment(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{block.name} failed:\n{done.stderr[-3000:]}"


@pytest.mark.slow
def test_the_api_example_runs_against_the_served_app(scripted, tmp_path):
    import dataclasses

    from r2mad.settings.config import load_config
    from r2mad.ui import build_app
    from r2mad.ui.serving import launch
    from tests.helpers import free_port

    [block] = [b for b in ALL if b.marker == "app"]
    config = load_config(scripted, env={**os.environ, "R2MAD_DATA_DIR": str(tmp_path / "var")})
    config = dataclasses.replace(config, app=dataclasses.replace(config.app, default_bank=None))
    demo = build_app(config)
    demo.queue(default_concurrency_limit=4)
    port = free_port()
    launch(demo, prevent_thread_lock=True, server_port=port, quiet=True)
    try:
        code = block.code.replace("http://127.0.0.1:7860/", f"http://127.0.0.1:{port}/")
        assert code != block.code
        scope: dict = {}
        exec(compile(code, block.name, "exec"), scope)
        runs = scope["c"].predict(limit=10, api_name="/list_runs")
        assert scope["t"]["run_id"] and len(runs) == 4  # three debates (one with the Advanced settings), the fork
    finally:
        demo.close()
