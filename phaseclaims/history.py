"""The rules' history: for each row, whether its rule was committed before the files it reads.

A row's **rule** is the code that reaches its verdict: the function of a topic module that
builds the row (``Claim.rule``, by default the function that constructed it) and every
definition of this package it uses, followed through the package's modules (functions,
classes and module constants; the row's container :mod:`~.ledger` and this module aside).
A definition's **logic** is its syntax tree without docstrings, without the text of its
strings and without the names of this package's definitions it refers to (a module
constant it reads is replaced by its value): a reworded sentence or a renamed helper is not
a new rule; a changed threshold, branch or formula is.

Read from git: every version of every module of the package, in each of its homes
(:data:`HOMES`: an import from a past home is an import of this package, so a module moved
here keeps its logic); a logic's date is the first commit where some definition of the
package had it (under any name, in any module), never for logic not yet committed. Per
file a row reads: the commit where it first appeared (renames followed, and a file whose
content was committed before under another name dated by that). A row's rule is
**before** its data when the logic of every definition it uses is dated before every file
first appeared (by commit time; the same commit is not before). Otherwise it is "after data
(logic unchanged since)" when every definition's logic is the one its name had when it
first appeared, and "revised after data" when not.

Without git, or in a shallow clone, nothing here can be read: :class:`History` says so
(``available``), and the ledger takes each row's history from its committed record
(``docs/claims.json``) instead of inventing one.
"""

from __future__ import annotations

import ast
import subprocess
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

__all__ = ["BEFORE", "AFTER", "REVISED", "NO_DATA", "UNKNOWN", "Dating", "History",
           "definitions_of", "logic"]

BEFORE = "rule before data"
AFTER = "rule after data (logic unchanged since)"
REVISED = "rule revised after data"
NO_DATA = "no data read"
UNKNOWN = "history unavailable"

PACKAGE = Path(__file__).resolve().parent
#: The package's folders in a checkout, past ones first and the present one last: git is read
#: under each, and an import from any of them (its dotted name) is an import of this package.
HOMES = ("dnnphase/compare/claims", "phaseclaims")
_DOTTED = tuple(home.replace("/", ".") for home in HOMES)
#: Modules whose definitions are the ledger's machinery, not a row's rule.
NOT_RULES = ("ledger", "history", "__init__")
NEVER = float("inf")  # the time of something not yet committed


@dataclass(frozen=True)
class Dating:
    """A row's rule against its data: ``state`` (one of the module's five texts) and
    ``before`` (True only for :data:`BEFORE`, and for a row reading no file)."""

    state: str

    @property
    def before(self) -> bool:
        return self.state in (BEFORE, NO_DATA)


class _Normalise(ast.NodeTransformer):
    """Docstrings out, every string's text emptied, the package's names anonymised (a
    module constant replaced by its value)."""

    def __init__(self, package_names=frozenset(), constants=None):
        self.package_names = package_names
        self.constants = constants or {}

    def _body(self, node):
        self.generic_visit(node)
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
        if hasattr(node, "name"):
            node.name = "_"
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = visit_Module = _body

    def visit_Constant(self, node):
        return ast.Constant("") if isinstance(node.value, str) else node

    def visit_JoinedStr(self, node):
        return ast.Constant("")

    def visit_ImportFrom(self, node):
        # an import from the package's past home reads as one from its present home
        inner = _inside(node.module) if node.module and not node.level else None
        if inner is not None:
            node.module = ".".join(filter(None, (_DOTTED[-1], inner)))
        return node

    def visit_Name(self, node):
        if node.id in self.constants:
            return ast.Name(id="=" + self.constants[node.id], ctx=node.ctx)
        if node.id in self.package_names:
            return ast.Name(id="_", ctx=node.ctx)
        return node


def logic(node: ast.AST, package_names=frozenset(), constants=None) -> str:
    """A definition's logic (module doc) as a comparable string; ``package_names``: the
    names of the package's definitions in its module, ``constants``: the module's constants
    by name -> their value's logic. ``node`` is normalised in place."""
    tree = _Normalise(package_names, constants).visit(node)
    return ast.dump(tree, annotate_fields=False)


def _top_level(tree: ast.Module) -> dict[str, ast.AST]:
    """A module's top-level definitions by name: functions, classes, assigned names."""
    found = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node
    return found


def _logic_of(source: str) -> dict[str, str]:
    """Every top-level definition's logic in a module's source ({} if it does not parse)."""
    try:
        tree = ast.parse(source)
        values = ast.parse(source)  # a second tree: the constants' values, normalised alone
    except SyntaxError:
        return {}
    tops = _top_level(tree)
    names = frozenset(tops) | frozenset(_links(tree))
    constants = {name: logic(node.value) for name, node in _top_level(values).items()
                 if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None}
    return {name: logic(node, names, constants) for name, node in tops.items()}


def _inside(module: str) -> str | None:
    """``module``'s name inside this package when it is in one of its homes (:data:`HOMES`;
    "" for the package itself), else None."""
    for dotted in _DOTTED:
        if module == dotted:
            return ""
        if module.startswith(dotted + "."):
            return module[len(dotted) + 1:]
    return None


def _links(tree: ast.Module) -> dict[str, tuple[str, str | None]]:
    """A module's names imported from this package, from any of its homes: local name ->
    (module, definition), or (module, None) where the name is a module of it."""
    names = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and node.module and not node.level):
            continue
        inner = _inside(node.module)
        for alias in node.names:
            local = alias.asname or alias.name
            if inner:
                names[local] = (inner, alias.name)
            elif inner == "":
                names[local] = (alias.name, None)
    return names


def _uses(node: ast.AST, tops: dict, links: dict) -> list[tuple[str, str | None]]:
    """What a definition refers to: ``(module or "", name)``; "" for its own module."""
    found = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            if sub.id in tops:
                found.append(("", sub.id))
            elif links.get(sub.id, (None, None))[1] is not None:
                found.append(links[sub.id])
        elif isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
            target = links.get(sub.value.id)
            if target is not None and target[1] is None:
                found.append((target[0], sub.attr))
    return found


def definitions_of(rule: str, package: Path = PACKAGE) -> list[str]:
    """The definitions a rule uses, as ``"module.name"`` (module doc), the rule first.

    Parameters
    ----------
    rule : str
        ``"module.function"`` of a module of this package (``"main_text._network_rows"``).
    package : Path
        The package's folder (the ledger's own by default).
    """
    files = sorted(Path(package).glob("*.py"))
    tops, links = _index(tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size)
                               for p in files))
    seen, todo = [], [tuple(rule.split(".", 1))]
    while todo:
        module, name = todo.pop(0)
        if module in NOT_RULES or (module, name) in seen or name not in tops.get(module, {}):
            continue
        seen.append((module, name))
        todo += [(m or module, n) for m, n in _uses(tops[module][name], tops[module],
                                                     links[module])]
    return [f"{m}.{n}" for m, n in seen]


@cache
def _index(files: tuple[tuple[str, int, int], ...]) -> tuple[dict, dict]:
    """Per module of a package, its top-level definitions and its links (:func:`_top_level`,
    :func:`_links`), parsed once for every rule: ``files`` is each module's path with its
    modification time and size, so an edited module is parsed again."""
    trees = {Path(path).stem: ast.parse(Path(path).read_text()) for path, _, _ in files}
    return ({module: _top_level(tree) for module, tree in trees.items()},
            {module: _links(tree) for module, tree in trees.items()})


def _git(root: Path, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=True, input=stdin).stdout


class History:
    """What git says of a checkout's rules and files (module doc).

    Parameters
    ----------
    root : Path
        The checkout (a git work tree with its full history).
    """

    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()
        self.reason = ""
        try:
            if _git(self.root, "rev-parse", "--is-shallow-repository").strip() == "true":
                self.reason = "a shallow clone: its commits before the last are missing"
            elif Path(_git(self.root, "rev-parse", "--show-toplevel").strip()).resolve() \
                    != self.root:
                self.reason = "--root is not the top of a git work tree"
        except (OSError, subprocess.CalledProcessError):
            self.reason = "no git history (git missing or not a git work tree)"
        self._definitions: dict[str, list[str]] = {}

    @property
    def available(self) -> bool:
        return not self.reason

    @cached_property
    def _first_seen(self) -> dict[str, float]:
        """Every path's first commit time, a renamed file or a copy of another (the same
        content) keeping its source's: one pass over the whole history."""
        log = _git(self.root, "log", "--reverse", "-M", "--diff-filter=ACR", "--raw",
                   "--no-abbrev", "--format=@%ct")
        first: dict[str, float] = {}
        content: dict[str, float] = {}  # blob -> its first time
        time = NEVER
        for line in log.splitlines():
            if line.startswith("@"):
                time = float(line[1:])
                continue
            if not line.startswith(":"):
                continue
            meta, *paths = line.split("\t")
            blob, status = meta.split()[3], meta.split()[4]
            seen = content.setdefault(blob, time)
            if status[0] in "RC" and len(paths) == 2:
                seen = min(seen, first.get(paths[0], time))
            first.setdefault(paths[-1], seen)
        return first

    def file_first(self, path: str) -> float:
        """Commit time when ``path`` first appeared (renames followed); inf if never."""
        return self._first_seen.get(path, NEVER)

    @cached_property
    def _versions(self) -> list[tuple[float, str, dict[str, str]]]:
        """Every committed version of every module of the package, in any of its homes:
        (time, module, logic by definition), oldest first."""
        log = _git(self.root, "log", "--format=@%H %ct", "--name-only", "--", *HOMES)
        wanted = []
        for block in log.split("@")[1:]:
            head, *names = [line for line in block.splitlines() if line.strip()]
            commit, time = head.split()
            wanted += [(float(time), commit, n) for n in names if n.endswith(".py")]
        wanted.sort()
        blobs = _read_batch(self.root, "".join(f"{c}:{n}\n" for _, c, n in wanted))
        return [(t, Path(n).stem, _logic_of(text))
                for (t, _, n), text in zip(wanted, blobs, strict=True) if text]

    @cached_property
    def _dates(self) -> dict[str, float]:
        """Each logic's date: the first commit where some definition had it."""
        dates = {}
        for time, _, defs in self._versions:
            for dump in defs.values():
                dates.setdefault(dump, time)
        return dates

    def definition(self, qualified: str) -> tuple[float, bool]:
        """``(date, unchanged)`` of ``"module.name"``: its logic's date (inf: not yet
        committed) and whether its logic is the one its name first had in its module."""
        module, name = qualified.split(".", 1)
        now = _current(module).get(name)
        if now is None:
            return NEVER, False
        first = next((defs[name] for _, m, defs in self._versions
                      if m == module and name in defs), now)
        return self._dates.get(now, NEVER), first == now

    def dating(self, rule: str, files) -> Dating:
        """A row's :class:`Dating`: its rule (``"module.function"``) against its files."""
        if not self.available or not rule:
            return Dating(UNKNOWN)
        if not files:
            return Dating(NO_DATA)
        if rule not in self._definitions:
            self._definitions[rule] = definitions_of(rule)
        dates = [self.definition(d) for d in self._definitions[rule]]
        if not dates:
            return Dating(UNKNOWN)
        data = min(self.file_first(f) for f in files)
        if max(date for date, _ in dates) < data:
            return Dating(BEFORE)
        return Dating(AFTER if all(unchanged for _, unchanged in dates) else REVISED)


@cache
def _current(module: str) -> dict[str, str]:
    """The logic of the package's module as it runs."""
    path = PACKAGE / f"{module}.py"
    return _logic_of(path.read_text()) if path.is_file() else {}


def _read_batch(root: Path, requests: str) -> list[str]:
    """The text of each ``commit:path`` line of ``requests`` ("" for a missing one)."""
    raw = subprocess.run(["git", "-C", str(root), "cat-file", "--batch"], input=requests.encode(),
                         capture_output=True, check=True).stdout
    out, at = [], 0
    for _ in requests.splitlines():
        end = raw.index(b"\n", at)
        header = raw[at:end].split()
        if len(header) < 3 or header[1] == b"missing":
            out.append("")
            at = end + 1
            continue
        size = int(header[2])
        out.append(raw[end + 1:end + 1 + size].decode("utf-8", "replace"))
        at = end + 1 + size + 1
    return out
