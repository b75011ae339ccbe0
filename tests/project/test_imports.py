"""The package's import graph has no cycle and runs one way down the library's order (ORDER: entry points ->
exports and serving -> annotation -> engine -> forks, runs, evaluation -> the loop, methods, memory, grading ->
backends, settings, types; above them all the test-only `testing/` and the app's `app.py`): every `import` of an
r2mad module, at module level or inside a function, points to a package at or below its own, so the library never
imports what it does not ship (tests/, testing/, app.py); and no test module imports another (what tests share is in
tests/helpers.py and tests/conftest.py)."""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROOTS = ("r2mad", "testing", "app", "tests")  # the top-level names this checkout's code imports its own code by


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The modules of `modules` that `path` imports (`from pkg import sub` counts as importing pkg.sub)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ROOTS:
            subs = {f"{node.module}.{a.name}" for a in node.names} & modules
            found |= subs or ({node.module} & modules)
    return found


def import_graph() -> dict[str, set[str]]:
    """r2mad's modules, testing/'s and app.py, each with the modules of these it imports."""
    files = [*(ROOT / "r2mad").rglob("*.py"), *(ROOT / "testing").rglob("*.py"), ROOT / "app.py"]
    paths = {module_name(p): p for p in files}
    modules = set(paths)
    return {name: imports_of(path, modules) - {name} for name, path in paths.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_walker_finds_a_cycle_it_is_shown():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_in_r2mad():
    graph = import_graph()
    assert "r2mad.memory.bank" in graph["r2mad.engine.resources"]  # it sees real imports
    assert "r2mad.bench.scripted.server" in graph["testing.scripted_server"]  # testing/'s and app.py's too
    assert "r2mad.ui.api" in graph["app"]
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def imports_of_test_modules(folder: Path) -> dict[str, set[str]]:
    """Per file under `folder`, the test modules (`tests.test_*`, `tests.<folder>.test_*`) it imports (also in code it
    runs from a string)."""
    found = {}
    for path in sorted(folder.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        names = set(re.findall(r"^\s*(?:from|import)\s+(tests\.(?:\w+\.)?test_\w+)", text, re.MULTILINE))
        if names:
            found[path.name] = names
    return found


def test_the_test_import_checker_sees_each_kind_of_import(tmp_path):
    (tmp_path / "test_a.py").write_text("from tests.test_b import x\n\ndef f():\n    import tests.test_c\n")
    (tmp_path / "test_d.py").write_text('S = """\nfrom tests.test_e import y\n"""\nfrom tests.helpers import z\n')
    assert imports_of_test_modules(tmp_path) == {"test_a.py": {"tests.test_b", "tests.test_c"},
                                               "test_d.py": {"tests.test_e"}}


def test_no_test_module_imports_another():
    """What tests share lives in tests/helpers.py or tests/conftest.py, so a test module runs on its own."""
    found = imports_of_test_modules(ROOT / "tests")
    assert found == {}, "; ".join(f"tests/{name} imports {', '.join(sorted(mods))}" for name, mods in found.items())


# The library's internal order, top to bottom: a package may import its own modules and those of the packages
# below it, never one above. A package is a folder with its subfolders (ui/render/ has a place of its own); each
# root module stands alone.
ORDER = ["testing", "app", "__main__", "cli", "commands", "bench", "ui", "exports", "ui.render", "serving",
         "annotation", "engine", "steer", "runs", "evaluation", "debate", "guard", "human", "methods", "memory",
         "prompts", "grading", "backends", "settings", "budget", "types", "text", "relay", "jsonl", "safewrite", ""]


def package_of(module: str) -> str:
    """`r2mad.ui.render.chat` -> `ui.render` (a place of its own in ORDER); `r2mad.evaluation.benchmarks.gsm8k` ->
    `evaluation` (a subfolder belongs to its folder); `r2mad.debate` -> `debate`; `r2mad` -> ``; outside the
    package, its top-level name (`testing.replicas` -> `testing`, `app` -> `app`)."""
    if module.split(".")[0] != "r2mad":
        return module.split(".")[0]
    parts = module.split(".")[1:]
    return ".".join(parts[:2]) if ".".join(parts[:2]) in ORDER else (parts[:1] or [""])[0]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    rank = {name: i for i, name in enumerate(ORDER)}
    return [f"{a} -> {b}" for a, targets in sorted(graph.items()) for b in sorted(targets)
            if rank[package_of(b)] < rank[package_of(a)]]


def test_every_package_has_its_place_in_the_order():
    assert sorted({package_of(m) for m in import_graph()} - set(ORDER)) == []


def test_the_layer_checker_sees_an_import_up_the_order():
    assert upward_imports({"r2mad.runs.store": {"r2mad.commands.common", "r2mad.types"},
                           "r2mad.engine.service": {"r2mad.engine.runner"}, "r2mad.types": {"r2mad.debate"},
                           "r2mad.ui.render.chat": {"r2mad.ui.layout"}, "app": {"r2mad.ui.layout"},
                           "r2mad.bench.speed": {"testing.scripted_server"}}) == \
        ["r2mad.bench.speed -> testing.scripted_server", "r2mad.runs.store -> r2mad.commands.common",
         "r2mad.types -> r2mad.debate", "r2mad.ui.render.chat -> r2mad.ui.layout"]


def test_the_library_imports_nothing_it_does_not_ship():
    """tests/, testing/ and app.py stay in the checkout; an installed r2mad that imports one fails on first use."""
    outside = {"tests", "testing", "app"}
    found = []
    for path in sorted((ROOT / "r2mad").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            found += [f"{path.relative_to(ROOT)} imports {n}" for n in names if n.split(".")[0] in outside]
    assert found == []


def test_imports_run_one_way_down_the_order():
    """Entry points (cli, commands, bench, ui) -> exports, serving -> annotation -> engine -> forks, runs,
    evaluation -> the loop, methods, memory, prompts, grading -> backends, settings, plain types. So no two
    packages import each other, directly or round a cycle."""
    assert upward_imports(import_graph()) == []
