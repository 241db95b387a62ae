"""The house's layout (docs/architecture.md): folders along the data's path, imports one way.

dnnphase's folders in the order the data passes them; a module may import its own
folder and the folders before it, never one after it. springblock never imports
dnnphase, phasecore neither of them.
"""

import ast
import io
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: dnnphase's layers in the data's order; a module imports its own layer or earlier ones.
LAYERS = {
    "base": 0,  # dnnphase.defaults, knobs, idx, data
    "networks": 1,
    "training": 2,
    "measures": 3,
    "sweeps": 4,
    "compare": 5,
    "face": 6,  # dnnphase/__init__.py, dnnphase.cli
}
BASE = {"defaults", "knobs", "idx", "data"}
FACE = {"__init__", "cli"}


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> str:
    parts = module.split(".")
    if parts == ["dnnphase"]:
        return "face"
    if parts[1] in LAYERS:
        return parts[1]
    if parts[1] in BASE:
        return "base"
    if parts[1] in FACE:
        return "face"
    raise AssertionError(f"{module}: in no layer of tests/cross/test_layout.py")


def _imports(path: Path):
    """Every module ``path`` imports, at the top or inside a function (absolute names)."""
    package = _module(path) if path.name == "__init__.py" else _module(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _sources(package: str):
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("path", _sources("dnnphase"), ids=lambda p: _module(p))
def test_dnnphase_imports_only_its_own_layer_and_earlier_ones(path):
    here = _layer(_module(path))
    for name in _imports(path):
        if not name.startswith("dnnphase.") or name.count(".") < 1:
            continue
        top = name.split(".")[1]
        if not ((ROOT / "dnnphase" / top).is_dir() or (ROOT / "dnnphase" / f"{top}.py").exists()):
            continue  # an attribute of the package (from dnnphase import sweep), not a module
        there = _layer(name)
        assert LAYERS[there] <= LAYERS[here], (
            f"{_module(path)} ({here}) imports {name} ({there}), a later layer")


@pytest.mark.parametrize(("package", "never"), [("springblock", ("dnnphase",)),
                                                 ("phasecore", ("dnnphase", "springblock"))])
def test_the_chain_and_the_shared_layer_never_import_the_network_side(package, never):
    for path in _sources(package):
        for name in _imports(path):
            assert name.split(".")[0] not in never, f"{_module(path)} imports {name}"


def test_the_layer_test_sees_imports():
    """The collector finds relative and function-level imports (else the tests test nothing)."""
    names = set(_imports(ROOT / "dnnphase" / "cli.py"))
    assert {"dnnphase.sweeps.sweep", "dnnphase.compare.presets"} <= names
    assert _layer("dnnphase.networks.cnn") == "networks"
    with pytest.raises(AssertionError):
        _layer("dnnphase.nowhere")


def test_dnnphase_keeps_few_modules_at_the_top_and_none_long():
    top = sorted(p.name for p in (ROOT / "dnnphase").glob("*.py"))
    assert len(top) <= 8, top
    for package in ("dnnphase", "springblock", "phasecore"):
        for path in _sources(package):
            lines = path.read_text().count("\n")
            assert lines <= 600, f"{path.relative_to(ROOT)}: {lines} lines"


def test_docs_hold_documents_only():
    assert not sorted((ROOT / "docs").rglob("*.py"))


def test_every_test_file_sits_where_its_subject_does():
    """tests/<package>/<folder>/test_*.py mirrors <package>/<folder>/; cross-cutting suites
    live in tests/cross/, the scripts' tests in tests/scripts/."""
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        folder = path.parent.relative_to(ROOT / "tests")
        assert folder.parts, f"{path.relative_to(ROOT)}: a test at tests/'s top level"
        if folder.parts[0] in ("cross", "scripts"):
            assert len(folder.parts) == 1, path
            continue
        assert (ROOT / folder / "__init__.py").exists(), (
            f"{path.relative_to(ROOT)}: no package {folder} to mirror")


def _code_lines(path: Path):
    """(function, its lines of code): no blank lines, comments or docstrings."""
    source = path.read_text()
    tree = ast.parse(source)
    prose = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            prose.update(range(body[0].lineno, body[0].end_lineno + 1))
    code = set()
    skip = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skip:
            code.update(range(token.start[0], token.end[0] + 1))
    code -= prose
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node, sum(node.lineno <= line <= node.end_lineno for line in code)


def test_no_function_is_over_80_lines_of_code():
    assert max(n for _, n in _code_lines(ROOT / "dnnphase" / "cli.py")) > 20  # it counts
    for package in ("dnnphase", "springblock", "phasecore", "scripts"):
        for path in _sources(package):
            for node, lines in _code_lines(path):
                assert lines <= 80, f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {lines}"


def _declared(path: Path) -> list[str] | None:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return None


_MODULES = {_module(p): p for package in ("dnnphase", "springblock", "phasecore")
            for p in _sources(package)}


@pytest.mark.parametrize("path", list(_MODULES.values()), ids=lambda p: _module(p))
def test_every_module_says_what_is_public(path):
    """One rule: a module's ``__all__`` lists its public names; the rest is internal."""
    declared = _declared(path)
    assert declared is not None, f"{_module(path)} has no __all__"
    # an underscore marks nothing: __all__ is the one rule (dunders like __version__ aside)
    assert not [n for n in declared if n.startswith("_") and not n.startswith("__")], declared


def test_the_packages_import_only_public_names_of_each_other():
    """A module takes from another module of the three packages only what that module's
    ``__all__`` lists (a test may reach an internal name; the code does not)."""
    crossings, private = 0, []
    for path in _MODULES.values():
        here = _module(path)
        package = here if path.name == "__init__.py" else here.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if base not in _MODULES or base == here:
                continue
            public = _declared(_MODULES[base]) or []
            for alias in node.names:
                if f"{base}.{alias.name}" in _MODULES:
                    continue  # a module, not a name
                crossings += 1
                if alias.name not in public:
                    private.append(f"{here} imports {base}.{alias.name}")
    assert not private, "names not in their module's __all__:\n" + "\n".join(private)
    assert crossings > 100  # the walk sees the imports
