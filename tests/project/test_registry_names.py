"""The registry is the only vocabulary: no code outside methods/ and prompts/ spells a method's name."""
from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from r2mad.methods import REGISTRY

PACKAGE = Path(__file__).resolve().parents[2] / "r2mad"
OWNERS = ("methods", "prompts")  # where method names belong
# literals that equal a method's name but are data or the app's own name, with how often each appears
ALLOWED = {
    ("settings/serving.py", "mad"): 1,  # AppConfig.default_method: a setting's default, as configs name methods
    ("settings/config.py", "r2mad"): 2,  # the app's cache and data folders, named after the app
    ("settings/config.py", "truemad"): 1,  # the TrueMAD paper's protocol, a profile named after the paper
    ("commands/traces.py", "r2mad"): 1,  # --project's default: the traces' project, named after the app
    ("exports/otel.py", "r2mad"): 1,  # the traces' project and service name: the app
    ("memory/index.py", "r2mad"): 1,  # an index file's maker: the app
    ("serving/openai_wire.py", "r2mad"): 1,  # the served model's extra reply field and owner: the app
    ("ui/examples.py", "mad"): 1,  # each example card names the method it shows (data)
    ("ui/examples.py", "r2mad"): 1,
    ("ui/examples.py", "madm2-objective"): 1,
    ("ui/examples.py", "truemad"): 1,
}


def _docstrings(tree: ast.AST) -> set[int]:
    nodes = (n for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                                            ast.AsyncFunctionDef)))
    return {id(n.body[0].value) for n in nodes if n.body and isinstance(n.body[0], ast.Expr)}


def spelled_names() -> Counter:
    """(file under r2mad/, method name) -> how many string literals (docstrings aside) equal the name."""
    names = set(REGISTRY) | {f"{name}+advice" for name in REGISTRY}
    found = Counter()
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE)
        if where.parts[0] in OWNERS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in names and id(node) not in skip:
                found[(where.as_posix(), node.value)] += 1
    return found


def test_no_method_name_is_spelled_outside_the_registry():
    found = spelled_names()
    assert found == Counter(ALLOWED), ("spell methods through r2mad.methods (REGISTRY rows, PLAIN/FULL/SAMPLING/"
                                       "SINGLE, is_debate, with_advice, takers), not by name: "
                                       f"{dict(found - Counter(ALLOWED))}")


def test_the_check_sees_a_name_in_code():
    assert spelled_names()[("ui/examples.py", "truemad")] == 1  # the scan reads literals inside calls
