"""The package's import graph has no cycle and runs one way down the library's order (ORDER: entry points ->
exports and serving -> annotation -> engine -> forks, runs, evaluation -> the loop, methods, memory, grading ->
backends, settings, types): every `import` of an r2mad module, at module level or inside a function, points to a
package at or below its own; and no test module imports another (what tests share is in tests/helpers.py and
tests/conftest.py)."""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The r2mad modules `path` imports (`from pkg import sub` counts as importing pkg.sub)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("r2mad"):
            subs = {f"{node.module}.{a.name}" for a in node.names} & modules
            found |= subs or ({node.module} & modules)
    return found


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in (ROOT / "r2mad").rglob("*.py")}
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
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def imports_of_test_modules(folder: Path) -> dict[str, set[str]]:
    """Per file of `folder`, the `tests.test_*` modules it imports (also in code it runs from a string)."""
    found = {}
    for path in sorted(folder.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        names = set(re.findall(r"^\s*(?:from|import)\s+(tests\.test_\w+)", text, re.MULTILINE))
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
ORDER = ["__main__", "cli", "commands", "bench", "ui", "exports", "ui.render", "serving", "annotation", "engine",
         "steer", "runs", "evaluation", "debate", "guard", "human", "methods", "memory", "prompts", "grading",
         "backends", "settings", "budget", "types", "text", "jsonl", "safewrite", ""]


def package_of(module: str) -> str:
    """`r2mad.ui.render.chat` -> `ui.render` (a place of its own in ORDER); `r2mad.evaluation.benchmarks.gsm8k` ->
    `evaluation` (a subfolder belongs to its folder); `r2mad.debate` -> `debate`; `r2mad` -> ``."""
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
                           "r2mad.ui.render.chat": {"r2mad.ui.layout"}}) == \
        ["r2mad.runs.store -> r2mad.commands.common", "r2mad.types -> r2mad.debate",
         "r2mad.ui.render.chat -> r2mad.ui.layout"]


def test_imports_run_one_way_down_the_order():
    """Entry points (cli, commands, bench, ui) -> exports, serving -> annotation -> engine -> forks, runs,
    evaluation -> the loop, methods, memory, prompts, grading -> backends, settings, plain types. So no two
    packages import each other, directly or round a cycle."""
    assert upward_imports(import_graph()) == []
