"""Defaults shown as their values in the API reference (a griffe extension).

A default written by name in the source (``depth: int = defaults.DEPTH``,
``optimizer: str = OptimizerSettings.kind``) keeps each setting's value in one home
(tests/cross/test_layout.py), but a reader of the reference wants the value itself:
``depth: int = 4``. mkdocs.yml loads this extension
(``tools/griffe_literal_defaults.py:LiteralDefaults``), which replaces every such default
of a function's parameter or a dataclass field with the value Python gives it at run
time, where that value is a literal (it reads back with :func:`ast.literal_eval`); any
other default (``np.inf``, an object) is left as written. Both the signature and the
Parameters table then show the value.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect

import griffe

#: Top-level packages whose objects are looked up at run time.
PACKAGES = ("springblock", "dnnphase", "phasecore")

_MISSING = object()


def literal(value) -> str | None:
    """``repr(value)`` where it is a Python literal (that reads back as an equal value),
    else None."""
    text = repr(value)
    try:
        same = ast.literal_eval(text) == value
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return text if same is True else None


def written_by_name(default) -> bool:
    """Whether a griffe default names something (a constant, an attribute) rather than
    being a literal written out."""
    return isinstance(default, griffe.Expr) and any(
        isinstance(part, griffe.ExprName) for part in default.iterate(flat=False))


def runtime(path: str):
    """The object at a dotted griffe path, imported (``_MISSING`` if it cannot be)."""
    module, _, rest = path.partition(".")
    try:
        obj = importlib.import_module(module)
    except ImportError:
        return _MISSING
    for part in rest.split(".") if rest else ():
        try:
            obj = importlib.import_module(f"{obj.__name__}.{part}") if inspect.ismodule(obj) \
                else getattr(obj, part)
        except ImportError:
            obj = getattr(obj, part, _MISSING)
        except AttributeError:
            return _MISSING
        if obj is _MISSING:
            return _MISSING
    return obj


def runtime_defaults(obj: griffe.Object) -> dict:
    """name -> default value of the function's parameters or the dataclass's fields."""
    live = runtime(obj.path)
    if live is _MISSING:
        return {}
    if inspect.isclass(live) and dataclasses.is_dataclass(live):
        return {f.name: f.default for f in dataclasses.fields(live)
                if f.default is not dataclasses.MISSING}
    try:
        signature = inspect.signature(live)
    except (TypeError, ValueError):
        return {}
    return {name: p.default for name, p in signature.parameters.items()
            if p.default is not inspect.Parameter.empty}


def _set(parameters, values: dict) -> None:
    for parameter in parameters:
        if written_by_name(parameter.default) and parameter.name in values:
            text = literal(values[parameter.name])
            if text is not None:
                parameter.default = text


def _objects(obj: griffe.Object):
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _objects(member)


class LiteralDefaults(griffe.Extension):
    """Replaces every default written by name with its literal value, once the package is
    loaded (and after griffe's dataclass extension has made ``__init__``)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        for obj in _objects(pkg):
            if obj.is_function:
                _set(obj.parameters, runtime_defaults(obj))
            elif obj.is_class:
                values = runtime_defaults(obj)
                for attribute in obj.members.values():  # the fields, as written
                    if attribute.is_attribute and written_by_name(attribute.value) \
                            and attribute.name in values:
                        text = literal(values[attribute.name])
                        if text is not None:
                            attribute.value = text
                init = obj.all_members.get("__init__")
                if init is not None and not init.is_alias and init.is_function:
                    _set(init.parameters, values)
