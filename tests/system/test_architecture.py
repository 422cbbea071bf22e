"""The layers of the project, checked from the source with ``ast`` (nothing is imported).

* ``selection_core`` is pure: it imports nothing of this project above it and
  uses no file, process, clock, randomness or environment;
* each package imports only the packages listed before it in ``tests.support.PACKAGES``,
  so the import graph has no cycle (imports inside functions count: a lazy import is
  still an import);
* no module takes part in an import circle at module level (what runs on ``import``: not a
  function's body, nor an ``if TYPE_CHECKING:`` block);
* a function in ``tasks/`` (a task or a helper) is a thin shell: at most
  ``MAX_TASK_STATEMENTS`` statements;
* no module of the product is longer than ``MAX_MODULE_LINES`` lines, no function's body longer than
  ``MAX_FUNCTION_LINES``;
* no private name of another library is used (``DOCUMENTED_PRIVATE_NAMES`` aside), nothing in a Prefect module
  replaced.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from tests.support import PACKAGES, ROOT

#: Modules the pure core may not import (the file system, processes, clock, randomness, the installed modules).
FORBIDDEN_CORE_MODULES = frozenset(
    {"os", "time", "secrets", "subprocess", "random", "shutil", "tempfile", "io", "importlib"}
)

#: Names the pure core may not call.
FORBIDDEN_CORE_CALLS = frozenset({"open", "getenv", "putenv"})

#: Statements allowed in the body of a function of ``tasks/`` (the docstring aside).
MAX_TASK_STATEMENTS = 15

#: Lines a module of the product may have: a longer one is two concepts, or says too much.
MAX_MODULE_LINES = 500

#: Lines a function's body may have (its signature and docstring aside: a flow's parameters and their descriptions
#: are what the UI shows): a longer one does several things.
MAX_FUNCTION_LINES = 60


def _modules(package: str) -> Iterator[tuple[str, Path]]:
    """Each module of the folder ``package``, by the name it is imported as."""
    nested = [ROOT / other for other in PACKAGES if other.startswith(package + "/")]  # listed on their own
    for path in sorted((ROOT / package).rglob("*.py")):
        if any(path.is_relative_to(folder) for folder in nested):
            continue
        parts = path.relative_to(ROOT / package).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        yield ".".join([PACKAGES[package], *parts]), path


def _package_of(module: str) -> str | None:
    """The folder whose import name is the longest prefix of ``module``, if it is the project's."""
    found = [f for f, name in PACKAGES.items() if module == name or module.startswith(name + ".")]
    return max(found, key=lambda f: len(PACKAGES[f]), default=None)


def _imports(module: str, nodes: Iterable[ast.AST], is_package: bool) -> Iterator[tuple[str, list[str], int]]:
    """Every module named by an import among ``nodes`` (absolute), the names taken from it, and its line."""
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            yield target, [alias.name for alias in node.names], node.lineno


def _run_on_import(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes under ``node`` run on import: not a function's body, nor an ``if TYPE_CHECKING:`` block."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(child, ast.If) and ast.unparse(child.test) in {"TYPE_CHECKING", "typing.TYPE_CHECKING"}:
            for statement in child.orelse:
                yield statement
                yield from _run_on_import(statement)
            continue
        yield child
        yield from _run_on_import(child)


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _package_graph() -> dict[str, dict[str, str]]:
    """``graph[a][b]``: where package ``a`` first imports package ``b``."""
    graph: dict[str, dict[str, str]] = {p: {} for p in PACKAGES}
    for package in PACKAGES:
        for module, path in _modules(package):
            for target, _, line in _imports(module, ast.walk(_tree(path)), path.name == "__init__.py"):
                top = _package_of(target)
                if top is not None and top != package:
                    graph[package].setdefault(top, f"{path.relative_to(ROOT)}:{line}")
    return graph


def test_every_package_is_listed() -> None:
    found = sorted(p.parent.name for p in ROOT.glob("*/__init__.py") if p.parent.name not in {"tests"})
    nested = [p for p in PACKAGES if "/" in p]  # a layer of its own inside another package
    assert all((ROOT / p / "__init__.py").is_file() for p in nested)
    assert found == sorted(p for p in PACKAGES if "/" not in p)


def test_the_core_imports_nothing_of_the_project_above_it() -> None:
    offending = [
        f"{path.relative_to(ROOT)}:{line} imports {target}"
        for module, path in _modules("selection_core")
        for target, _, line in _imports(module, ast.walk(_tree(path)), path.name == "__init__.py")
        if _package_of(target) not in (None, "selection_core")
    ]
    assert offending == []


def test_the_core_touches_no_file_process_clock_or_environment() -> None:
    offending = []
    for module, path in _modules("selection_core"):
        tree = _tree(path)
        for target, _, line in _imports(module, ast.walk(tree), path.name == "__init__.py"):
            if target.split(".")[0] in FORBIDDEN_CORE_MODULES:
                offending.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if name in FORBIDDEN_CORE_CALLS:
                    offending.append(f"{path.relative_to(ROOT)}:{node.lineno} calls {name}()")
            if isinstance(node, ast.Attribute) and node.attr == "environ":
                offending.append(f"{path.relative_to(ROOT)}:{node.lineno} reads the environment")
    assert offending == []


def _cycle(graph: dict[str, dict[str, str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def _assert_no_cycle(graph: dict[str, dict[str, str]]) -> None:
    cycle = _cycle(graph)
    where = [] if cycle is None else [f"{a} -> {b} at {graph[a][b]}" for a, b in zip(cycle, cycle[1:])]
    assert cycle is None, "; ".join(where)


def test_the_package_import_graph_has_no_cycle() -> None:
    _assert_no_cycle(_package_graph())


def test_each_package_imports_only_the_layers_below_it() -> None:
    order = list(PACKAGES)
    upward = [
        f"{package} imports {target} at {where}"
        for package, targets in _package_graph().items()
        for target, where in targets.items()
        if order.index(target) > order.index(package)
    ]
    assert upward == []


def _module_graph() -> dict[str, dict[str, str]]:
    """``graph[a][b]``: where module ``a`` imports module ``b`` at module level.

    ``import a.b.c`` runs ``a``'s and ``a.b``'s ``__init__`` first, unless the importer is inside them (they are
    under way); ``from a import c`` reads ``c`` from ``a``, whose ``__init__`` must have run, and imports the
    submodule ``a.c`` if there is one."""
    paths = {module: path for package in PACKAGES for module, path in _modules(package)}
    graph: dict[str, dict[str, str]] = {module: {} for module in paths}
    for module, path in paths.items():
        is_package = path.name == "__init__.py"
        own = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1 + is_package)}
        for target, names, line in _imports(module, _run_on_import(_tree(path)), is_package):
            parts = target.split(".")
            imported = [".".join(parts[:i]) for i in range(1, len(parts))] + [target]
            imported = [m for m in imported if m not in own or (names and m == target)]
            imported += [f"{target}.{name}" for name in names]
            for other in imported:
                if other in paths and other != module:
                    graph[module].setdefault(other, f"{path.relative_to(ROOT)}:{line}")
    return graph


def test_no_module_takes_part_in_an_import_circle() -> None:
    _assert_no_cycle(_module_graph())


def test_the_module_graph_follows_what_runs_on_import() -> None:
    tree = ast.parse(
        "import a\nif TYPE_CHECKING:\n    import b\nelse:\n    import c\ntry:\n    import d\nexcept ImportError:\n"
        "    pass\ndef f():\n    import e\nclass K:\n    from .g import h\n"
    )
    assert [target for target, _, _ in _imports("p.m", _run_on_import(tree), False)] == ["a", "c", "d", "p.g"]
    graph = _module_graph()
    assert "selection_storage.stores.urls" in graph["selection_storage.stores"]
    assert "selection_storage.stores" not in graph["selection_storage.stores.urls"]  # its own package, under way


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycle({"a": {"b": ""}, "b": {"c": ""}, "c": {"a": ""}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b": ""}, "b": {}, "c": {"a": ""}}) is None


def _statements(body: list[ast.stmt]) -> int:
    """Statements in ``body``, nested blocks included; a nested function or class counts as one."""
    count = 0
    for node in body:
        count += 1
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            count += _statements(getattr(node, field, []) or [])
        for handler in getattr(node, "handlers", []) or []:
            count += _statements(handler.body)
        for case in getattr(node, "cases", []) or []:
            count += _statements(case.body)
    return count


def _function_sizes(path: Path) -> Iterator[tuple[str, int, int]]:
    for node in ast.walk(_tree(path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
                body = body[1:]  # the docstring
            yield node.name, node.lineno, _statements(body)


@pytest.mark.parametrize("path", sorted((ROOT / "tasks").glob("*.py")), ids=lambda p: p.name)
def test_functions_in_tasks_are_thin(path: Path) -> None:
    fat = [
        f"{name} (line {line}): {n} statements" for name, line, n in _function_sizes(path) if n > MAX_TASK_STATEMENTS
    ]
    assert fat == [], f"more than {MAX_TASK_STATEMENTS} statements: move the logic a layer down"


def test_the_statement_count_sees_nested_blocks() -> None:
    tree = ast.parse(
        "def f():\n    '''doc'''\n    for x in y:\n        if x:\n            a = 1\n        else:\n            b = 2\n"
    )
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    assert _statements(function.body[1:]) == 4


def test_no_module_is_over_the_most_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for package in PACKAGES
        for _, path in _modules(package)
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"over {MAX_MODULE_LINES} lines: split the module by concept, or say less"


def _body_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of ``function``'s body, from its first statement after the docstring to its end."""
    body = function.body
    if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]
    end = body[-1].end_lineno
    assert end is not None
    return end - body[0].lineno + 1


def test_no_function_body_is_over_the_most_lines() -> None:
    long = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {lines}"
        for package in PACKAGES
        for _, path in _modules(package)
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (lines := _body_lines(node)) > MAX_FUNCTION_LINES
    ]
    assert long == [], f"over {MAX_FUNCTION_LINES} lines: a function that does several things"


def test_the_body_count_leaves_the_docstring_and_signature_out() -> None:
    tree = ast.parse('def f(\n    a,\n    b,\n):\n    """doc\n    more"""\n    x = 1\n\n    return x\n')
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    assert _body_lines(function) == 3


#: Private-looking names that are documented interfaces: fsspec's convention for the coroutine of an async
#: filesystem's method (``_call_s3`` of s3fs, ``_call`` of gcsfs's ``call``), and ``os._exit``.
DOCUMENTED_PRIVATE_NAMES = frozenset({"_call_s3", "_call", "_exit"})

#: What the product may not do with another library: reach into its private names, or replace what its modules hold.
TRESPASS_SAMPLE = """
import prefect.runner._starter_direct as starter
from prefect.runner import _private_helper, Runner
import prefect.flow_engine as engine
from prefect import flow_engine
import prefect
import re._parser
from codecs import _thing
import gcsfs

def patch(info, fs):
    runner = Runner()
    starter.run_flow_in_subprocess = None
    engine.multiprocessing = None
    flow_engine.multiprocessing += 1
    prefect.flow_engine.multiprocessing = None
    setattr(engine, "x", 1)
    runner._deployment_registry.register_flow(1, 2)
    getattr(info, "_is_text_encoding", True)
    fs._set_session()
    gcsfs.core._location = 1
    gcsfs.core.default = 1
    fs._call_s3("get_object")
    self._own = 1
    other._own
"""


def _is_own(module: str) -> bool:
    return module == "__future__" or _package_of(module) is not None


def _foreign_modules(tree: ast.Module) -> Iterator[tuple[int, str, list[str], set[str]]]:
    """Each import of another library's module in ``tree``: its line, the module, the names taken, the local names
    bound to a module (``import a.b as c``: ``c``; ``from a import b``: ``b`` when lower-case, maybe a module)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not _is_own(alias.name):
                    yield node.lineno, alias.name, [], {alias.asname or alias.name.split(".")[0]}
        elif isinstance(node, ast.ImportFrom) and not node.level and not _is_own(node.module or ""):
            names = [alias.name for alias in node.names]
            bound = {alias.asname or alias.name for alias in node.names if alias.name.islower()}
            yield node.lineno, node.module or "", names, bound


def _own_private_names() -> frozenset[str]:
    """Every private name the product defines (a function, a class, an assigned name or attribute, a field)."""
    own: set[str] = set()
    for package in PACKAGES:
        for _, path in _modules(package):
            for node in ast.walk(_tree(path)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    own.add(node.name)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    own.add(node.id)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                    own.add(node.attr)
                elif isinstance(node, ast.alias) and node.asname:
                    own.add(node.asname)
    return frozenset(name for name in own if name.startswith("_"))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in DOCUMENTED_PRIVATE_NAMES


def _trespasses(tree: ast.Module, own: frozenset[str]) -> Iterator[tuple[int, str]]:
    """Each use of another library beyond its public interface in ``tree``: an import of a private module or name
    (a part starting with ``_``), a private attribute (``x._name``, ``getattr(x, "_name")``) that the product itself
    does not define (``own``), and an assignment (or ``setattr``) to an attribute of a Prefect module."""
    modules: set[str] = set()  # local names bound to a module of another library
    prefect: set[str] = set()  # of them, Prefect's: nothing in them is replaced
    for line, module, names, bound in _foreign_modules(tree):
        modules |= bound
        prefect |= bound if module.split(".")[0] == "prefect" else set()
        if any(_private(part) for part in module.split(".")):
            yield line, f"import {module}"
        for name in names:
            if _private(name):
                yield line, f"from {module} import {name}"

    def on_module(target: ast.AST, names: set[str]) -> bool:
        while isinstance(target, ast.Attribute):
            target = target.value
        return isinstance(target, ast.Name) and target.id in names

    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            if node.func.id == "setattr":
                targets = [ast.Attribute(value=node.args[0], attr="?")]
            elif node.func.id == "getattr" and len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                name = str(node.args[1].value)
                if _private(name) and name not in own:
                    yield node.lineno, f'private attribute getattr(..., "{name}")'
        for target in targets:
            if isinstance(target, ast.Attribute) and on_module(target, prefect):
                yield node.lineno, f"assignment to {ast.unparse(target)}"
        if isinstance(node, ast.Attribute) and _private(node.attr):
            if isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"}:
                continue
            if node.attr not in own or on_module(node, modules):
                yield node.lineno, f"private attribute {ast.unparse(node)}"


def test_the_trespass_check_finds_each_kind() -> None:
    found = [what for _, what in _trespasses(ast.parse(TRESPASS_SAMPLE), frozenset({"_own"}))]
    expected = [
        "import prefect.runner._starter_direct",
        "from prefect.runner import _private_helper",
        "import re._parser",
        "from codecs import _thing",
        "assignment to starter.run_flow_in_subprocess",
        "assignment to engine.multiprocessing",
        "assignment to flow_engine.multiprocessing",
        "assignment to prefect.flow_engine.multiprocessing",
        "assignment to engine.?",
        "private attribute runner._deployment_registry",
        'private attribute getattr(..., "_is_text_encoding")',
        "private attribute fs._set_session",
        "private attribute gcsfs.core._location",
    ]
    assert sorted(found) == sorted(expected)


def test_the_product_uses_other_libraries_through_their_public_interface_only() -> None:
    """No private module or name of another library (Prefect, gcsfs, the standard library...) is imported or read,
    nothing in another library's module is replaced: a release may change any of them (``prefect>=3,<4`` is a
    range). fsspec's async convention (``_call_s3``, ``_call``) is documented: ``DOCUMENTED_PRIVATE_NAMES``."""
    own = _own_private_names()
    found = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for package in PACKAGES
        for _, path in _modules(package)
        for line, what in _trespasses(_tree(path), own)
    ]
    assert found == []
