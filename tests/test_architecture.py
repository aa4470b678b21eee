"""The import graph of `src/hermes` has no cycles, between modules or between parts.

How the graph is built (read from the source with `ast`, nothing is imported):

- A node is a module of `hermes` (`hermes.agent.loop`; a package is its `__init__`).
- Every `import`/`from … import` statement that can run counts, wherever it stands: at the
  top, inside a function or method (a deferred import only hides a cycle until that
  function runs), in a `try`. Imports under `if TYPE_CHECKING:` do not count: they never
  run, and a type hint may name the other side of a contract. Relative imports are resolved
  against the importing module.
- `from hermes.a import b` is an edge to `hermes.a.b` when that is a module, else to
  `hermes.a`; `import hermes.a.b` is an edge to `hermes.a.b`. Parent packages run on import
  but are not counted as edges: a package's `__init__` may re-export its submodules.

Rule 1: no cycle between modules (an edge from a module to itself is ignored).

Rule 2: no cycle between parts. A part is what sits directly under `hermes/`: a subpackage
(`agent`, `tools`, `cli`, `gateway`, …) or a top-level module (`runtime`, `plugins`, …); the
`hermes` package itself is no part. Part A depends on part B when any module of A imports
any module of B. The dependencies between parts must form no cycle, so each part can be
read (and tested) with only the parts below it.

New modules and parts are picked up by themselves: nothing here lists today's.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

import hermes

ROOT = Path(hermes.__file__).parent

Graph = dict[str, dict[str, tuple[str, str]]]
"""node -> {node it depends on: the module import that makes the edge}"""


def _module_name(path: Path) -> str:
    parts = ["hermes", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name a (possibly relative) `from … import` statement names."""
    if not node.level:
        return node.module or ""
    package = module if is_package else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")  # where statements nest


def _statements(node: ast.AST) -> Iterator[ast.AST]:
    """Every statement under `node` (imports are statements: expressions are not walked),
    except the bodies of `if TYPE_CHECKING:` (their `else` runs)."""
    pending = [node]
    while pending:
        parent = pending.pop()
        blocks = ("orelse",) if _type_checking(parent) else _BLOCKS
        for field in blocks:
            for child in getattr(parent, field, ()):
                yield child
                pending.append(child)


def _imported(module: str, source: str, is_package: bool, known: set[str]) -> Iterator[str]:
    """Every hermes module `module` imports, from any statement of its source that can run."""
    for node in _statements(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, is_package, node)
            names = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        for name in names:
            while name and name not in known:  # `import hermes.a.b as x` of a non-module
                name = name.rpartition(".")[0]
            if name.startswith("hermes.") and name != module:
                yield name


def module_graph() -> Graph:
    modules = _modules()
    known = set(modules)
    graph: Graph = {module: {} for module in modules}
    for module, path in modules.items():
        source = path.read_text(encoding="utf-8")
        for target in _imported(module, source, path.name == "__init__.py", known):
            graph[module][target] = (module, target)
    return graph


def _part(module: str) -> str | None:
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else None


def part_graph(modules: Graph) -> Graph:
    graph: Graph = defaultdict(dict)
    for source, targets in modules.items():
        for target, via in targets.items():
            a, b = _part(source), _part(target)
            if a and b and a != b:
                graph[a].setdefault(b, via)
    return dict(graph)


def _cycles(graph: Graph) -> list[list[str]]:
    """Cycles until none is left, each found by `graphlib` and then cut at one edge: enough
    to name what to fix, without listing the (exponentially many) simple cycles."""
    edges = {node: set(targets) for node, targets in graph.items()}
    found = []
    while True:
        try:
            TopologicalSorter(edges).prepare()
        except CycleError as exc:
            cycle = list(reversed(exc.args[1]))[:-1]  # graphlib lists it end to start
            found.append(cycle)
            edges[cycle[0]].discard(cycle[1])
        else:
            return found


def _describe(graph: Graph, cycles: list[list[str]]) -> str:
    lines = []
    for cycle in cycles:
        steps = []
        for a, b in zip(cycle, [*cycle[1:], cycle[0]], strict=True):
            via = graph[a][b]
            steps.append(f"{a} -> {b}" + (f" (via {via[0]} -> {via[1]})" if via != (a, b) else ""))
        lines.append("; ".join(steps))
    return "\n".join(lines)


SAMPLE = """
from typing import TYPE_CHECKING
import hermes.a.top
from hermes.a import sub, name
from ..b import c
if TYPE_CHECKING:
    from hermes.a import hint
else:
    import hermes.a.other

def f():
    from hermes.a.deferred import thing
"""


def test_the_graph_sees_every_import_that_can_run() -> None:
    """The builder itself: top-level, function-local and relative imports are edges, type-only
    ones are not (a rule built on a graph that misses edges would pass vacuously)."""
    known = {f"hermes.a.{m}" for m in ("top", "sub", "hint", "other", "deferred")}
    known |= {"hermes.a", "hermes.b", "hermes.b.c", "hermes.x.y"}
    found = set(_imported("hermes.x.y", SAMPLE, False, known))
    assert found == {
        "hermes.a",  # `name` is no module: the package
        "hermes.a.top",
        "hermes.a.sub",
        "hermes.b.c",
        "hermes.a.other",
        "hermes.a.deferred",
    }


@pytest.fixture(scope="module")
def real_graph() -> Graph:
    """Hermes' import graph, parsed once for the tests below (the sources do not change)."""
    return module_graph()


def test_the_real_graph_has_the_edges_it_should(real_graph: Graph) -> None:
    graph = real_graph
    assert "hermes.agent.context" in graph["hermes.agent.loop"]  # top level
    assert "hermes.models.client" in graph["hermes.runtime"]  # function-local
    assert len(graph) > 150 and sum(map(len, graph.values())) > 500


def test_a_cycle_is_reported_with_the_modules_that_make_it() -> None:
    graph: Graph = {
        "hermes.a.x": {"hermes.b.y": ("hermes.a.x", "hermes.b.y")},
        "hermes.b.y": {"hermes.a.x": ("hermes.b.y", "hermes.a.x")},
    }
    parts = part_graph(graph)
    assert _cycles(graph) and _cycles(parts) == [["a", "b"]]
    assert "a -> b (via hermes.a.x -> hermes.b.y)" in _describe(parts, _cycles(parts))


def test_no_import_cycle_between_modules(real_graph: Graph) -> None:
    graph = real_graph
    cycles = _cycles(graph)
    if cycles:
        pytest.fail("import cycles between modules:\n" + _describe(graph, cycles))


def test_no_dependency_cycle_between_parts(real_graph: Graph) -> None:
    graph = part_graph(real_graph)
    cycles = _cycles(graph)
    if cycles:
        pytest.fail("dependency cycles between parts of hermes:\n" + _describe(graph, cycles))
