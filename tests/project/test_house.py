"""The house holds its shape: no function of the library takes more than 12 parameters (settings travel as one
`Setup` or request, not as keywords), and the debate loop is started only where it is known to be: a new caller
of `run_debate(` or `Debate(` fails here and should go through the engine (engine/service.start) instead. And
docs/house.md, the map of which folder to open for what, names only paths that exist and every package."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_PARAMETERS = 12
# Left over 12, each with why; the list may only shrink (to nothing, now: the API's endpoints take their fields as
# one ask, r2mad/ui/asks.py).
OVER_THE_BOUND: dict[str, str] = {}

# The callers of the loop outside the engine's start, each with why it may call it.
LOOP_CALLERS = {
    "r2mad/engine/runner.py": "the engine's own runner (run_debate, Setup.debate)",
    "r2mad/engine/forks.py": "the engine's forks, reached from service.start",
    "r2mad/engine/build_memory.py": "build-memory: debates whose cases go to a bank, not saved runs",
    "r2mad/bench/crafted.py": "bench: times the loop, keeps nothing",
    "r2mad/bench/grading.py": "bench: times the loop, keeps nothing",
    "r2mad/bench/kinds.py": "bench: times the loop, keeps nothing",
    "r2mad/bench/load.py": "bench: times the loop, keeps nothing",
    "r2mad/bench/resources.py": "bench: times the loop, keeps nothing",
    "r2mad/bench/sampling.py": "bench: times the loop, keeps nothing",
    "r2mad/bench/speed.py": "bench: times the loop, keeps nothing",
}


def library_files() -> list[Path]:
    return [*sorted((ROOT / "r2mad").rglob("*.py")), ROOT / "app.py"]


def parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """Positional and keyword-only parameters, without *args, **kwargs, self and cls."""
    a = fn.args
    return [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs) if p.arg not in ("self", "cls")]


def too_many(source: str, name: str = "<source>") -> list[str]:
    return [f"{name} {n.name} takes {len(parameters(n))}"
            for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and len(parameters(n)) > MAX_PARAMETERS]


def loop_callers(source: str) -> bool:
    """Whether the source calls `run_debate(...)` or `Debate(...)` (by name or as an attribute)."""
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in ("run_debate", "Debate"):
                return True
    return False


def test_the_counter_counts_what_a_caller_passes():
    thirteen = ", ".join(f"p{i}" for i in range(12))
    assert too_many(f"def f(self, {thirteen}, *args, **kw): pass") == []  # self, *args, **kw are not counted
    assert too_many(f"async def g({thirteen}, *, extra=1): pass") == ["<source> g takes 13"]
    assert too_many(f"class C:\n    def m(self, a, /, {thirteen}): pass") == ["<source> m takes 13"]


def test_no_function_in_the_library_takes_more_than_12_parameters():
    found = [x for p in library_files() for x in too_many(p.read_text(encoding="utf-8"), str(p.relative_to(ROOT)))]
    new = [x for x in found if x.rsplit(" takes ", 1)[0] not in OVER_THE_BOUND]
    assert new == [], "group them (a dataclass, the request, Setup): " + "; ".join(new)
    assert sorted(x.rsplit(" takes ", 1)[0] for x in found) == sorted(OVER_THE_BOUND), "take it off OVER_THE_BOUND"


def test_the_finder_sees_a_call_of_the_loop_and_not_a_handler_of_the_same_name():
    assert loop_callers("t = await run_debate(task, 'mad', setup)")
    assert loop_callers("d = r2mad.debate.Debate(backend, method)")
    assert not loop_callers("async def run_debate(self, question): pass\nrun = handlers.run_debate")


def test_only_the_known_callers_start_the_loop():
    callers = {str(p.relative_to(ROOT)) for p in library_files() if loop_callers(p.read_text(encoding="utf-8"))}
    assert sorted(callers - set(LOOP_CALLERS)) == [], "start runs through r2mad/engine/service.start"
    assert sorted(set(LOOP_CALLERS) - callers) == [], "no longer a caller: take it off LOOP_CALLERS"


def test_the_house_map_names_paths_that_exist_and_every_package():
    page = (ROOT / "docs" / "house.md").read_text(encoding="utf-8")
    named = {t for t in re.findall(r"`([^`\s*]+)`", page) if "/" in t or t.endswith((".py", ".yaml"))}
    assert sorted(t for t in named if not (ROOT / t).exists()) == []
    packages = sorted(f"{p.parent.relative_to(ROOT)}/" for p in (ROOT / "r2mad").rglob("__init__.py")
                      if p.parent != ROOT / "r2mad")
    assert [p for p in packages if p not in named] == [], "name it on docs/house.md"
    assert len(packages) >= 19  # the walk sees the packages (r2mad/grading/kinds/ among them)


def test_the_test_folders_mirror_the_packages_and_are_named_on_the_map():
    page = (ROOT / "docs" / "house.md").read_text(encoding="utf-8")
    folders = sorted(p.parent.name for p in (ROOT / "tests").glob("*/__init__.py"))
    assert [f for f in folders if f"`tests/{f}/`" not in page] == [], "name it on docs/house.md"
    assert [f for f in folders if f not in ("browser", "loop", "project") and not (ROOT / "r2mad" / f).is_dir()] == []
    assert list((ROOT / "tests").glob("test_*.py")) == [], "a test goes in the folder of what it tests"
    assert len(folders) >= 16
