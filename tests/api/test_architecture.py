"""The house rules of src/kleene, checked on the source: no import cycle, no private reach.

Every module's imports are read with :mod:`ast` (imports inside functions
included, since a lazy import can hide a cycle; imports under
``if TYPE_CHECKING:`` excluded, since they never run), and the graph of
kleene modules must have no cycle.  No module may import an underscore name
from another kleene module, and a module over 500 lines says why at its top.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "kleene"
MAX_LINES = 500
SIZE_NOTE = "Size:"
"""A module longer than MAX_LINES carries this word in its docstring, with the reason."""


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _runtime_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Import statements that run: everywhere but under ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def resolve(name: str, here: str, node: ast.ImportFrom | ast.Import, known: dict[str, Path]) -> list[str]:
    """The kleene modules an import statement loads (a package's ``__init__`` included)."""
    targets: list[str] = []
    if isinstance(node, ast.Import):
        targets = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            pkg = here.split(".")
            if not known[here].name == "__init__.py":
                pkg = pkg[:-1]
            pkg = pkg[: len(pkg) - (node.level - 1)]
            base = ".".join([*pkg, base] if base else pkg)
        targets = [base] + [f"{base}.{a.name}" for a in node.names]
    out = []
    for t in targets:
        if not t.startswith("kleene"):
            continue
        # Importing kleene.a.b runs kleene/__init__, kleene/a/__init__ and kleene/a/b.
        parts = t.split(".")
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if prefix in known and prefix != name:
                out.append(prefix)
    return out


def import_graph() -> dict[str, set[str]]:
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        edges: set[str] = set()
        for node in _runtime_imports(tree):
            edges.update(resolve(name, name, node, known))
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph, as a list of modules, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m) :] + [m]
            if m not in state and (cycle := visit(m)) is not None:
                return cycle
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (cycle := visit(n)) is not None:
            return cycle
    return None


def test_the_cycle_finder_finds_cycles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycle_in_kleene() -> None:
    """Parents are excluded from a module's own edges: ``kleene/__init__`` importing
    ``kleene.api`` which imports ``kleene.x`` is the package loading, not a cycle."""
    graph = import_graph()
    assert len(graph) > 40
    # A package's __init__ is loaded before any of its modules: an edge from a
    # module to its own ancestors is implied by Python and never a real loop.
    for name, edges in graph.items():
        graph[name] = {e for e in edges if not name.startswith(e + ".")}
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_no_private_name_imported_from_another_kleene_module() -> None:
    known = modules()
    offenders = []
    for name, path in known.items():
        for node in _runtime_imports(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kleene"):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        offenders.append(f"{name}: from {node.module} import {alias.name}")
    assert offenders == []


def test_long_modules_say_why() -> None:
    long = []
    for name, path in modules().items():
        text = path.read_text()
        if text.count("\n") > MAX_LINES:
            doc = ast.get_docstring(ast.parse(text)) or ""
            if SIZE_NOTE not in doc:
                long.append(f"{name} ({text.count(chr(10))} lines)")
    assert long == []


def test_importing_kleene_loads_neither_spark_nor_pandas() -> None:
    code = (
        "import sys, kleene; "
        "print(sorted(m for m in ('pyspark', 'pandas', 'kleene.spark') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


ORACLE_MAY_IMPORT = frozenset({"kleene.language.ast", "kleene.language.parser", "kleene.language.errors"})
"""What ``kleene.reference`` (the oracle) may import from kleene outside itself: the AST, the
parser that builds it and the parser's errors.  Every semantic helper it needs (nullable,
single-event patterns, references of a condition, ...) is its own, in
``kleene.reference.semantics``, cross-checked against the engine's in
``tests/differential/test_oracle_independence.py``: sharing one would hide a bug in it from
every property test."""

MR_REFERENCE_MAY_IMPORT = frozenset(
    {
        "kleene.language.errors",
        "kleene.language.match_recognize.ast",
        "kleene.language.match_recognize.parser",
    }
)
"""What the MATCH_RECOGNIZE reference (``kleene.reference.match_recognize``,
``kleene.reference.mr_expressions``, ``kleene.reference.mr_walks``) may import: its language's
AST, parser and errors.  Its syntax walks are its own (``kleene.reference.mr_walks``), not the
static checker's that the engine (``kleene.runtime.match_recognize``) uses."""

MR_REFERENCE = frozenset({"kleene.reference.match_recognize", "kleene.reference.mr_expressions",
                          "kleene.reference.mr_walks"})



def imported_names(tree: ast.Module, here: str, known: dict[str, Path]) -> list[str]:
    """The kleene modules a module's imports name (``from kleene.language import ast`` names
    ``kleene.language.ast``; ``from kleene.language.variables import nullable`` names
    ``kleene.language.variables``); a relative import is reported as such."""
    targets: list[str] = []
    for node in _runtime_imports(tree):
        if isinstance(node, ast.Import):
            targets += [a.name for a in node.names]
        elif node.level:
            targets.append(f"relative import in {here}")
        else:
            base = node.module or ""
            targets += [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    return [t for t in targets if t.startswith(("kleene", "relative"))]


def test_the_oracle_imports_only_the_parser_and_the_ast_of_kleene() -> None:
    known = modules()
    found = {
        name: imported_names(ast.parse(path.read_text()), name, known)
        for name, path in known.items()
        if name.startswith("kleene.reference")
    }
    assert "kleene.language.ast" in found["kleene.reference.semantics"]
    offenders = [
        f"{module} imports {target}"
        for module, targets in found.items()
        for target in targets
        if not (
            target.startswith("kleene.reference")
            or target in (MR_REFERENCE_MAY_IMPORT if module in MR_REFERENCE else ORACLE_MAY_IMPORT)
        )
    ]
    assert offenders == []


def test_the_oracle_import_rule_catches_a_shared_helper() -> None:
    """The rule reads ``from kleene.language.variables import nullable`` as a breach."""
    code = "from kleene.language.variables import nullable\nfrom kleene.language import ast\n"
    names = imported_names(ast.parse(code), "kleene.reference.x", modules())
    assert names == ["kleene.language.variables", "kleene.language.ast"]
    assert [n for n in names if n not in ORACLE_MAY_IMPORT] == ["kleene.language.variables"]
