"""The house's layout (docs/architecture.md): folders along the data's path, imports one way.

dnnphase's folders in the order the data passes them; a module may import its own
folder and the folders before it, never one after it, nor a later layer's name through a
package's front door. springblock never imports dnnphase, phasecore neither of them. The
ledger of the papers' claims, phaseclaims, sits above all three: it may import them, and
none of them imports it. No module of the four imports itself back along a circle (imports
inside functions count).
"""

import ast
import io
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: dnnphase's layers in the data's order; a module imports its own layer or earlier ones.
LAYERS = {
    "base": 0,  # dnnphase.defaults, knobs, the data package
    "networks": 1,
    "training": 2,
    "measures": 3,
    "sweeps": 4,
    "compare": 5,
    "face": 6,  # dnnphase/__init__.py, dnnphase.cli, dnnphase.metrics (a front door)
}
BASE = {"defaults", "knobs", "data"}
FACE = {"__init__", "cli", "metrics"}


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


def _sources(package: str):
    return sorted((ROOT / package).rglob("*.py"))


#: The packages, the ledger above the other three (docs/architecture.md).
PACKAGES = ("dnnphase", "springblock", "phasecore", "phaseclaims")

#: Every module of the four packages, by its dotted name.
_MODULES = {_module(p): p for package in PACKAGES for p in _sources(package)}


def _loaded(source: str, module: str, is_package: bool, known=_MODULES):
    """Every module ``source`` (the module ``module``) loads by name, at the top or inside
    a function, as absolute names: ``import a.b`` loads ``a.b``; ``from a import b`` loads
    ``a.b`` where that is a module of ``known``, and else ``a`` itself — ``b`` is then an
    attribute of ``a``, so an alias in a package's front door is an import of that front
    door (``from dnnphase import separation`` imports ``dnnphase``, the face)."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base


def _imports(path: Path):
    """Every module ``path`` imports, at the top or inside a function (absolute names)."""
    return _loaded(path.read_text(), _module(path), path.name == "__init__.py")


def _climbs(module: str, source: str, known=_MODULES) -> list[str]:
    """The imports of a dnnphase module that reach a later layer than its own."""
    here = _layer(module)
    out = []
    for name in _loaded(source, module, module in known and
                        known[module].name == "__init__.py", known):
        if name != "dnnphase" and not name.startswith("dnnphase."):
            continue
        there = _layer(name)
        if LAYERS[there] > LAYERS[here]:
            out.append(f"{module} ({here}) imports {name} ({there}), a later layer")
    return out


@pytest.mark.parametrize("path", _sources("dnnphase"), ids=lambda p: _module(p))
def test_dnnphase_imports_only_its_own_layer_and_earlier_ones(path):
    climbs = _climbs(_module(path), path.read_text())
    assert not climbs, "\n".join(climbs)


def test_a_climb_through_a_front_doors_alias_is_caught():
    """A name taken from a package's ``__init__`` is an import of that ``__init__``: an alias
    there (``dnnphase.separation`` for ``dnnphase.measures.separation_torch``) is no way
    around the layers."""
    sweep = "dnnphase.sweeps.sweep"
    assert _climbs(sweep, "from dnnphase import separation\n") == [
        f"{sweep} (sweeps) imports dnnphase (face), a later layer"]
    assert _climbs(sweep, "def f():\n    import dnnphase\n    from .. import compare\n") == [
        f"{sweep} (sweeps) imports dnnphase (face), a later layer",
        f"{sweep} (sweeps) imports dnnphase.compare (compare), a later layer"]
    assert _climbs(sweep, "from dnnphase.compare import fit_chain\n")  # a folder's front door
    assert not _climbs(sweep, "from dnnphase.measures import separation_torch\n"
                              "from dnnphase.sweeps import memory\nimport numpy\n")


#: dnnphase.compare's rooms in order (docs/architecture.md): a room imports its own modules and
#: earlier rooms, never a later one nor the package's front door (which imports the presets).
COMPARE_ROOMS = ("comparator", "scrutiny", "figures", "presets")


def _room(module: str) -> str | None:
    """The room of a module of dnnphase.compare (``dnnphase.compare.<room>...``), else None."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["dnnphase", "compare"] and len(parts) > 2 else None


def _room_crossings(module: str, source: str, known=_MODULES) -> list[str]:
    """The imports of a module of dnnphase.compare that reach a later room or the front door."""
    here = _room(module)
    out = []
    for name in _loaded(source, module, module in known and
                        known[module].name == "__init__.py", known):
        there = _room(name)
        if name == "dnnphase.compare" or (
                there is not None and COMPARE_ROOMS.index(there) > COMPARE_ROOMS.index(here)):
            out.append(f"{module} ({here}) imports {name}")
    return out


@pytest.mark.parametrize("module", [m for m in _MODULES if _room(m)], ids=str)
def test_the_compare_rooms_import_one_way(module):
    assert _room(module) in COMPARE_ROOMS, f"{module}: in no room of COMPARE_ROOMS"
    crossings = _room_crossings(module, _MODULES[module].read_text())
    assert not crossings, "\n".join(crossings)


def test_the_room_test_sees_a_crossing():
    report = "dnnphase.compare.comparator.report"
    assert _room_crossings(report, "def f():\n    from dnnphase.compare.scrutiny import "
                                   "own_claims\n") == [
        f"{report} (comparator) imports dnnphase.compare.scrutiny.own_claims"]
    assert _room_crossings(report, "from dnnphase.compare import fit_chain\n")
    assert _room_crossings("dnnphase.compare.figures.comparison",
                           "from dnnphase.compare.presets import PRESETS\n")
    assert not _room_crossings("dnnphase.compare.figures.two_measures",
                               "from dnnphase.compare.scrutiny.own_claims import x\n"
                               "from dnnphase.compare.comparator.peaks import y\n"
                               "from dnnphase.compare.figures.comparison import z\n")


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph`` (module -> the modules it imports): its strongly
    connected components of more than one module, each sorted (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next((m for m in edges if m in graph), None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """module -> the modules of ``sources`` it imports (top level or inside a function);
    ``sources``: module -> (its source, whether it is a package's ``__init__``)."""
    return {module: {name for name in _loaded(text, module, is_package, sources)
                     if name in sources and name != module}
            for module, (text, is_package) in sources.items()}


def test_no_import_circle_in_the_four_packages():
    """No module imports, even from inside a function, a module that imports it back along
    some path: what a module needs sits below it (docs/architecture.md)."""
    graph = _import_graph({module: (path.read_text(), path.name == "__init__.py")
                           for module, path in _MODULES.items()})
    assert sum(len(edges) for edges in graph.values()) > 300  # the walk sees the imports
    circles = _circles(graph)
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_the_circle_test_finds_a_circle_through_an_import_inside_a_function():
    sources = {
        "pkg": ("from pkg.run import go\n", True),
        "pkg.run": ("from pkg import cost as budget\nfrom pkg.base import K\n", False),
        "pkg.cost": ("def price():\n    from pkg.run import choose\n", False),
        "pkg.base": ("K = 1\n", False),
        "pkg.fit": ("def f():\n    import pkg\n", False),
    }
    assert _circles(_import_graph(sources)) == [["pkg.cost", "pkg.run"]]
    sources["pkg"] = ("from pkg.run import go\nfrom pkg import fit\n", True)
    assert sorted(_circles(_import_graph(sources))) == [["pkg", "pkg.fit"],
                                                        ["pkg.cost", "pkg.run"]]
    sources["pkg.cost"] = ("from pkg.base import K\n", False)
    sources["pkg.fit"] = ("def f():\n    from pkg.run import go\n", False)
    assert _circles(_import_graph(sources)) == []


#: A network default's one home (docs/architecture.md, "Where each fact lives"): a
#: parameter or field of this name elsewhere takes its default from there, by name.
DEFAULT_HOMES = {
    **dict.fromkeys(("depth", "width", "channels", "kernel_size", "norm"),
                    "dnnphase/defaults.py"),
    **dict.fromkeys(("bn_eps", "bn_momentum"), "dnnphase/networks/spec.py"),
    **dict.fromkeys(("optimizer", "weight_decay", "betas", "eps", "momentum", "nesterov"),
                    "dnnphase/training/optim.py"),
}


def _written_defaults(source: str) -> list[tuple[int, str, str]]:
    """(line, name, default) of every parameter or dataclass field named in DEFAULT_HOMES
    whose default is written out as a literal (None, "unset", aside)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        pairs = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args.posonlyargs + node.args.args
            pairs = list(zip(args[len(args) - len(node.args.defaults):], node.args.defaults,
                             strict=True))
            pairs += [(a, d) for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults,
                                             strict=True) if d is not None]
            pairs = [(a.arg, d) for a, d in pairs]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and node.value is not None:
            pairs = [(node.target.id, node.value)]
        out += [(d.lineno, name, ast.unparse(d)) for name, d in pairs if name in DEFAULT_HOMES
                and isinstance(d, ast.Constant | ast.Tuple)
                and not (isinstance(d, ast.Constant) and d.value is None)]
    return out


def test_network_defaults_are_written_in_their_home_only():
    copies = [f"{path.relative_to(ROOT)}:{line} {name} = {value} (home: {DEFAULT_HOMES[name]})"
              for path in _sources("dnnphase") for line, name, value in
              _written_defaults(path.read_text())
              if str(path.relative_to(ROOT)) != DEFAULT_HOMES[name]]
    assert not copies, "defaults written outside their home:\n" + "\n".join(copies)
    # the check sees a copy (in a signature and in a dataclass), and not a default read by name
    assert [n for _, n, _ in _written_defaults(
        "def f(x, norm='batchnorm', *, betas=(0.9, 0.999), depth=DEPTH, eps=None): pass\n"
        "class C:\n    bn_eps: float = 1e-5\n    width: int = defaults.WIDTH\n")] == [
        "norm", "betas", "bn_eps"]


@pytest.mark.parametrize(("package", "never"), [("springblock", ("dnnphase",)),
                                                 ("phasecore", ("dnnphase", "springblock"))])
def test_the_chain_and_the_shared_layer_never_import_the_network_side(package, never):
    for path in _sources(package):
        for name in _imports(path):
            assert name.split(".")[0] not in never, f"{_module(path)} imports {name}"


def test_the_ledger_sits_above_the_three_packages():
    """phaseclaims judges the chain's paper and the networks' alike: it may import phasecore,
    springblock and dnnphase, and none of them imports it, not even inside a function."""
    below = [f"{_module(path)} imports {name}" for package in PACKAGES[:3]
             for path in _sources(package) for name in _imports(path)
             if name.split(".")[0] == "phaseclaims"]
    assert not below, "the ledger imported from below it:\n" + "\n".join(below)
    reached = {name.split(".")[0] for path in _sources("phaseclaims") for name in _imports(path)}
    assert set(PACKAGES[:3]) <= reached  # the walk sees the ledger's imports of all three
    # and an import of the ledger inside a function of a figure would be seen
    assert "phaseclaims.he_su" in _loaded("def draw():\n    from phaseclaims.he_su import "
                                          "paper_rule\n",
                                          "dnnphase.compare.figures.separation_laws", False)


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
    for package in PACKAGES:
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
    for package in (*PACKAGES, "scripts"):
        for path in _sources(package):
            for node, lines in _code_lines(path):
                assert lines <= 80, f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {lines}"


def _declared(path: Path) -> list[str] | None:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return None


@pytest.mark.parametrize("path", list(_MODULES.values()), ids=lambda p: _module(p))
def test_every_module_says_what_is_public(path):
    """One rule: a module's ``__all__`` lists its public names; the rest is internal."""
    declared = _declared(path)
    assert declared is not None, f"{_module(path)} has no __all__"
    # an underscore marks nothing: __all__ is the one rule (dunders like __version__ aside)
    assert not [n for n in declared if n.startswith("_") and not n.startswith("__")], declared


def test_the_packages_import_only_public_names_of_each_other():
    """A module takes from another module of the four packages only what that module's
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
