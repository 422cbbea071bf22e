"""Inside the pure core (``selection_core``): no import circle between its modules, and no
private name (``_x``) imported from one of its modules into another. Checked with ``ast``."""

from __future__ import annotations

import ast

from tests.support import ROOT

CORE = ROOT / "selection_core"


def _core_imports() -> dict[str, list[tuple[str, list[str]]]]:
    """``found[module]``: (core module imported, names taken from it), for every import in ``module``."""
    found: dict[str, list[tuple[str, list[str]]]] = {}
    for path in sorted(CORE.glob("*.py")):
        module = path.stem
        found[module] = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [alias.name for alias in node.names]
                if node.level == 1 and node.module:
                    found[module].append((node.module.split(".")[0], names))
                elif node.level == 1:  # from . import x
                    found[module] += [(name, []) for name in names]
                elif node.module and node.module.startswith("selection_core."):
                    found[module].append((node.module.split(".")[1], names))
    return found


def test_no_import_circle_inside_the_core() -> None:
    imports = _core_imports()
    graph = {m: {t for t, _ in targets if t in imports and t != "__init__"} for m, targets in imports.items()}
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(module: str, path: list[str]) -> list[str] | None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                return [*path, module, target]
            if target not in state and (cycle := visit(target, [*path, module])):
                return cycle
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state:
            assert visit(module, []) is None, "import circle in selection_core"


def test_no_private_name_crosses_a_module_of_the_core() -> None:
    crossing = [
        f"{module} imports {name} from {target}"
        for module, targets in _core_imports().items()
        for target, names in targets
        for name in names
        if name.startswith("_") and not name.startswith("__")
    ]
    assert crossing == []
