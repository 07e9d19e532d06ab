"""Figures of the package's shape: units, layers, imports between units, imports back up, cycles, sizes.

The layers are read from the layers contract in pyproject.toml (``[tool.importlinter]``), the same one
``lint-imports`` enforces, so the figures and the check cannot drift apart. Used for docs/architecture.md::

    python scripts/architecture_figures.py            # text
    python scripts/architecture_figures.py --json
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "ragreplay"


def contract_layers(pyproject: Path) -> list[list[str]]:
    """The layers of the first ``layers`` contract, top first, each a list of module names."""
    config = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]
    for contract in config["contracts"]:
        if contract["type"] == "layers":
            return [[m.strip() for m in layer.replace(":", "|").split("|")] for layer in contract["layers"]]
    raise SystemExit("no layers contract in pyproject.toml")


def unit_of(module: str) -> str:
    """The unit a module belongs to: ``ragreplay.x`` for ``ragreplay.x.y.z``."""
    return ".".join(module.split(".")[:2])


def layer_index(module: str, layers: list[list[str]]) -> int | None:
    """Index of the layer holding ``module`` (0 = top), or None when no layer names it."""
    for index, layer in enumerate(layers):
        if any(module == m or module.startswith(m + ".") for m in layer):
            return index
    return None


def strongly_connected(nodes: set[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one node (the import cycles)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    sys.setrecursionlimit(10000)

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(nodes):
        if node not in index:
            visit(node)
    return found


def source_figures(src: Path) -> dict[str, object]:
    """The largest module, the longest function (signature included) and the longest function body under
    ``src``, in lines (a typer command's options make its signature long)."""
    largest = ("", 0)
    longest = ("", 0)
    longest_body = ("", 0)
    for path in sorted(src.rglob("*.py")):
        text = path.read_text()
        rel = str(path.relative_to(src.parent))
        lines = len(text.splitlines())
        if lines > largest[1]:
            largest = (rel, lines)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > longest[1]:
                    longest = (f"{rel}:{node.name}", length)
                body = (node.end_lineno or node.lineno) - node.body[0].lineno + 1
                if body > longest_body[1]:
                    longest_body = (f"{rel}:{node.name}", body)
    return {
        "largest_module": list(largest),
        "longest_function": list(longest),
        "longest_function_body": list(longest_body),
    }


def figures(layers: list[list[str]]) -> dict[str, object]:
    """All figures for the installed package, judged against ``layers``."""
    graph = grimp.build_graph(PACKAGE, include_external_packages=False)
    modules = set(graph.modules)
    units = {unit_of(m) for m in modules if m != PACKAGE}
    unit_edges: dict[str, set[str]] = defaultdict(set)
    module_edges: dict[str, set[str]] = defaultdict(set)
    cross_imports = 0
    upward: list[str] = []
    for importer in sorted(modules):
        for imported in graph.find_modules_directly_imported_by(importer):
            module_edges[importer].add(imported)
            a, b = unit_of(importer), unit_of(imported)
            if importer == PACKAGE or a == b:
                continue
            cross_imports += 1
            unit_edges[a].add(b)
            ia, ib = layer_index(importer, layers), layer_index(imported, layers)
            if ia is not None and ib is not None and ib < ia:
                upward.append(f"{importer} -> {imported}")
    unplaced = sorted(u for u in units if layer_index(u, layers) is None and u != f"{PACKAGE}.__init__")
    return {
        "units": len(units),
        "layers": len(layers),
        "imports_between_units": cross_imports,
        "imports_back_up": len(upward),
        "imports_back_up_list": upward,
        "unit_cycles": strongly_connected(units, unit_edges),
        "module_cycles": strongly_connected(modules, module_edges),
        "units_in_no_layer": unplaced,
        "root_modules": sorted(m for m in units if not (ROOT / "src" / Path(*m.split("."))).is_dir()),
        **source_figures(ROOT / "src" / PACKAGE),
    }


def main() -> None:
    """Print the figures (``--json`` for a machine-readable copy)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--config", type=Path, default=ROOT / "pyproject.toml", help="a file with the contract"
    )
    args = parser.parse_args()
    result = figures(contract_layers(args.config))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for key, value in result.items():
        if key in ("largest_module", "longest_function", "longest_function_body"):
            assert isinstance(value, list)
            print(f"{key}: {value[0]} ({value[1]} lines)")
        elif isinstance(value, list):
            print(f"{key}: {len(value)}")
            for item in value:
                print(f"  {item}")
        else:
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
