"""Every callable the API reference documents says what it takes: its docstring's numpy
Parameters section names the signature's parameters, all of them, in their order (as
scikit-learn's test_docstring_parameters does). A class is checked against its
constructor (the class's docstring, or its ``__init__``'s), a method without ``self``; a
named tuple, a record one is given rather than one builds, lists its fields as Attributes.

What the reference documents is read from the built site (its headings), so that a name
the pages show cannot escape the check and a name they hide is not held to it.

``STILL_TO_DO`` lists the modules whose documented callables are not yet written this
way. Their callables are reported by ``test_the_modules_still_to_do_are_still_to_do``,
which fails once a module's are all done, so that the list only shrinks: empty it, do not
extend it.
"""

import importlib
import inspect
import re
from typing import NamedTuple

import griffe
import pytest

#: Modules (where a documented callable is defined) whose docstrings are still to be
#: written with a Parameters section that matches the signature. Each must still hold a
#: mismatch; remove a module once its callables pass.
STILL_TO_DO = ()

HEADING = re.compile(r'<h\d id="([\w.]+)" class="doc doc-heading"')


def public(path: str):
    """The object at a public dotted path (a module, or an attribute of one)."""
    module, _, attr = path.rpartition(".")
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError:
        return getattr(public(module), attr)


def signature_names(obj) -> list[str] | None:
    """The parameters a caller passes (``*args``/``**kwargs`` with their stars), or None
    for what is not called (a module, a property, a constant)."""
    if inspect.ismodule(obj) or not callable(obj):
        return None
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    stars = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    names = [stars.get(p.kind, "") + p.name for p in signature.parameters.values()]
    if names[:1] in (["self"], ["cls"]):  # an unbound method
        names = names[1:]
    return names


def documented_names(obj) -> list[str] | None:
    """The names of the docstring's numpy Parameters section (None: it has none); a class
    may document its constructor in its own docstring or in ``__init__``'s, a named tuple
    its fields as Attributes."""
    kinds = [griffe.DocstringSectionKind.parameters]
    if inspect.isclass(obj) and issubclass(obj, tuple) and hasattr(obj, "_fields"):
        kinds.append(griffe.DocstringSectionKind.attributes)
    docs = [inspect.getdoc(obj)]
    if inspect.isclass(obj) and "__init__" in vars(obj):
        docs.append(inspect.getdoc(vars(obj)["__init__"]))
    for text in docs:
        for section in griffe.Docstring(text or "", parser="numpy").parse(
                "numpy", warnings=False):
            if section.kind in kinds:
                return [p.name for p in section.value]
    return None


def defined_in(obj) -> str:
    target = obj.fget if isinstance(obj, property) else obj
    return getattr(target, "__module__", None) or ""


def mismatch(name: str) -> str | None:
    """What is wrong with the documented callable at ``name``'s docstring, or None."""
    obj = public(name)
    if isinstance(obj, property):
        return None
    wanted = signature_names(obj)
    if not wanted:
        return None
    written = documented_names(obj)
    if written is None:
        return f"{name}: no Parameters section for {wanted}"
    if written != wanted:
        return f"{name}: Parameters {written}, signature {wanted}"
    return None


@pytest.fixture(scope="module")
def documented(site) -> list[str]:
    """Every name the reference shows, once each."""
    return sorted({name for page, text in site.items() if page != "search_index"
                   for name in HEADING.findall(text)})


def test_every_documented_callable_documents_its_parameters_in_order(documented):
    checked, wrong = 0, []
    for name in documented:
        if defined_in(public(name)) in STILL_TO_DO:
            continue
        checked += signature_names(public(name)) is not None
        if (found := mismatch(name)) is not None:
            wrong.append(found)
    assert checked > 50  # the walk sees the reference
    assert not wrong, "\n".join(wrong)


def test_the_modules_still_to_do_are_still_to_do(documented):
    """Each module of ``STILL_TO_DO`` still has a callable to write (else take it off)."""
    by_module = {module: [] for module in STILL_TO_DO}
    for name in documented:
        module = defined_in(public(name))
        if module in by_module and (found := mismatch(name)) is not None:
            by_module[module].append(found)
    done = [module for module, wrong in by_module.items() if not wrong]
    assert not done, f"done, take off STILL_TO_DO: {done}"


def test_the_check_sees_a_missing_a_misordered_and_a_grouped_parameter():
    def plain(a, b=1, *args, c, **kwargs):
        """Intro.

        Parameters
        ----------
        a, b : int
            Two.
        *args
            More.
        c : str
            One.
        **kwargs
            The rest.
        """

    def swapped(a, b):
        """Parameters
        ----------
        b : int
        a : int
        """

    def bare(a):
        """Only a sentence."""

    class Made:
        """A class documented in its ``__init__``."""

        def __init__(self, size):
            """Parameters
            ----------
            size : int
            """

    assert signature_names(plain) == documented_names(plain) == ["a", "b", "*args", "c",
                                                                "**kwargs"]
    assert documented_names(swapped) == ["b", "a"] != signature_names(swapped)
    assert documented_names(bare) is None and signature_names(bare) == ["a"]
    assert signature_names(Made) == documented_names(Made) == ["size"]
    assert signature_names(Made.__init__) == ["size"]  # self is not a parameter

    class Record(NamedTuple):
        """Attributes
        ----------
        low : float
        high : float
        """

        low: float
        high: float

    assert signature_names(Record) == documented_names(Record) == ["low", "high"]
