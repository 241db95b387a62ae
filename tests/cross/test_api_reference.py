"""The API reference (mkdocs.yml, docs/api/): it builds with warnings as errors, has search,
shows no Sphinx role as text, gives every entry point its Parameters section, lists only
public names, and the examples on its pages run.

The rule for what is in it (mkdocs.yml, docs/api/index.md): the ``__all__`` of the front
doors and of the modules they export or the README has users import from (``DOORS``), each
name shown under that public path; implementation modules never.
"""

import importlib
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "docs" / "api"

#: The modules whose ``__all__`` the reference may show.
DOORS = ("springblock", "springblock.theory", "springblock.fit", "dnnphase", "dnnphase.metrics",
         "dnnphase.sweeps.tune", "dnnphase.compare", "phasecore")

#: What a user calls, each with a Parameters section (page: public paths).
ENTRY_POINTS = {
    "simulate": ("springblock.simulate", "springblock.ChainConfig", "springblock.run_ensemble"),
    "phase_diagram": ("springblock.phase_diagram",),
    "theory": ("springblock.theory.stationary_force", "springblock.theory.predict_positions"),
    "fit": ("springblock.fit.fit_spring", "springblock.fit.fit_trajectory",
            "dnnphase.compare.fit_chain"),
    "sweep": ("dnnphase.sweep", "dnnphase.SweepConfig"),
    "measure_model": ("dnnphase.measure_model",),
    "recorder": ("dnnphase.LoadCurveRecorder",),
    "tune": ("dnnphase.sweeps.tune.tune",),
    "compare": ("dnnphase.compare.compare",),
    "reproduce": ("dnnphase.compare.reproduce",),
}

#: A role as Markdown leaves it (its backticks made code) or as written.
ROLE = re.compile(r":(?:py:)?(?:func|class|mod|data|meth|attr|exc|obj|const):(?:`|<code>)")
HEADING = re.compile(r'<h\d id="([\w.]+)" class="doc doc-heading"')


def public(path: str):
    """The object at a public dotted path (a module, or an attribute of one)."""
    module, _, attr = path.rpartition(".")
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError:
        return getattr(public(module), attr)


def allowed_names() -> set[str]:
    """Every public path the reference may show: a door, a name of its ``__all__``, and
    the public members of the classes among them."""
    names = set(DOORS)
    for door in DOORS:
        module = public(door)
        for name in module.__all__:
            names.add(f"{door}.{name}")
            obj = getattr(module, name)
            if isinstance(obj, type):
                names |= {f"{door}.{name}.{m}" for m in dir(obj)
                          if not m.startswith("_") or m == "__call__"}
    return names


def test_the_reference_builds_with_search(site):
    index = json.loads(site["search_index"])
    assert any(doc["location"].startswith("simulate.html") for doc in index["docs"])
    assert 'id="springblock.simulate"' in site["simulate"]


def test_no_sphinx_role_is_shown_as_text(site):
    for page, text in site.items():
        assert not ROLE.search(text), (page, ROLE.search(text) and
                                       text[ROLE.search(text).start():][:80])
        assert "&lt;autoref" not in text, page  # a role where no Markdown is read (a type)


def test_every_entry_point_has_a_parameters_section(site):
    for page, names in ENTRY_POINTS.items():
        text = site[page]
        for name in names:
            start = text.index(f'id="{name}"')
            nxt = HEADING.search(text, start + 1)
            body = text[start:nxt.start() if nxt else len(text)]
            assert 'doc-section-title">Parameters:' in body, name


def test_only_public_names_are_listed(site):
    allowed = allowed_names()
    shown = {name for text in site.values() for name in HEADING.findall(text)}
    assert shown - allowed == set()
    assert {"springblock.simulate", "dnnphase.sweep", "dnnphase.measure_model"} <= shown
    for name in shown:  # and no numba kernel, whatever a door exports
        assert not type(public(name)).__module__.startswith("numba"), name


def test_the_pages_name_only_public_names():
    allowed = allowed_names()
    for page in PAGES.glob("*.md"):
        for name in re.findall(r"^::: ([\w.]+)", page.read_text(), flags=re.M):
            assert name in allowed, f"{page.name}: {name} is not public (see DOORS)"


def test_prose_survives_markdown(site):
    # a placeholder outside code would be read as an HTML tag and vanish
    assert "(alpha, <code>&lt;knob&gt;</code>, seed" in site["sweep"]
    assert "&lt;row&gt;, &lt;col&gt;" in site["phase_diagram"]
    # two asterisks of notation would set the text between them in italics
    assert re.search(r"h\(F\*\) = 0 \(Eq\. 8\)\. For unbounded \(Gaussian\) noise\s+F\* =",
                     site["theory"])
    for page, text in site.items():  # no RST literal-block marker, no stray bold
        if page.startswith("guide/"):
            continue  # Markdown as written (the ledger's totals are bold on purpose)
        assert not re.search(r"::\s*</p>", text), page
        assert not re.search(r"<strong>\d", text), page


def examples(page: str) -> str:
    return "\n".join(re.findall(r"^```python\n(.*?)^```", (PAGES / f"{page}.md").read_text(),
                                flags=re.M | re.S))


@pytest.mark.parametrize("page", [
    pytest.param(p.stem, marks=[pytest.mark.slow] if p.stem == "reproduce" else [])
    for p in sorted(PAGES.glob("*.md")) if "```python" in p.read_text()])
def test_the_examples_run(page, tmp_path, monkeypatch, one_torch_thread):
    monkeypatch.chdir(tmp_path)
    exec(compile(examples(page), f"docs/api/{page}.md", "exec"), {"__name__": "example"})


def test_roles_become_optional_references_and_code_is_left_alone():
    import griffe

    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from griffe_sphinx_roles import list_fields, rewrite, split_groups
    finally:
        sys.path.remove(str(ROOT / "tools"))
    module = griffe.Module("springblock.phase")
    module.set_member("ChainConfig", griffe.Alias("ChainConfig", "springblock.config.ChainConfig"))
    text = rewrite(module, ":func:`simulate` and :class:`ChainConfig`, :mod:`~phasecore.sweeps`,"
                           " :func:`the chain <springblock.simulate>`; ``:func:`x` <out>``,"
                           " dims (<row>, seed), *set* F* h(F*) 2**63\n```\n:func:`y` <knob>\n```")
    assert ('<autoref identifier="simulate" optional><code>simulate</code></autoref>' in text)
    assert 'identifier="springblock.config.ChainConfig" optional><code>ChainConfig<' in text
    assert 'identifier="phasecore.sweeps" optional><code>sweeps</code>' in text
    assert 'identifier="springblock.simulate" optional><code>the chain</code>' in text
    assert "``:func:`x` <out>``" in text and "(&lt;row&gt;, seed)" in text
    assert r"*set* F\* h(F\*) 2\*\*63" in text
    assert text.endswith("```\n:func:`y` <knob>\n```")
    fields = list_fields("Intro.\nx, y : the first\n    two.\nz : one.\n```\nq : int = 1\n```\n\n"
                         "Parameters\n----------\na : int\n")
    assert fields.startswith("Intro.\n\n* ``x, y`` — the first\n    two.\n* ``z`` — one.\n"
                             "```\nq : int")
    assert fields.endswith("Parameters\n----------\na : int\n")
    groups = split_groups("Parameters\n----------\na, b : int\n    one\n    two.\nc, d\n    x.\n")
    assert groups.endswith("a : int\n    one\n    two.\nb : int\n    one\n    two.\n"
                           "c\n    x.\nd\n    x.\n")


def test_a_group_described_as_another_docstrings_takes_each_description():
    import griffe

    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from griffe_sphinx_roles import _Originals, fields_of, inherit_groups
    finally:
        sys.path.remove(str(ROOT / "tools"))
    home_text = ("Intro.\n\na : the first.\nb, c : two\n    lines.\n\nParameters\n----------\n"
                 "d : int\n    The fourth, :func:`f`.\n")
    assert fields_of(home_text) == {"a": "the first.", "b": "two lines.", "c": "two lines.",
                                    "d": "The fourth, :func:`f`."}
    module = griffe.Module("pkg")
    home = griffe.Class("Home", parent=module, docstring=griffe.Docstring(home_text))
    user = griffe.Class("User", parent=module, docstring=griffe.Docstring(""))
    module.set_member("Home", home)
    module.set_member("User", user)
    text = inherit_groups(user, "Parameters\n----------\nd, a, z\n    As :class:`Home`'s.\n",
                          _Originals({"pkg.Home": home}, {"pkg.Home": home_text}))
    assert text.startswith("Parameters\n----------\nd\n    The fourth, <autoref identifier=")
    assert "\na\n    the first.\nz\n    As <autoref" in text  # a name the home lacks: as written


def test_no_parameter_row_only_points_to_another(site):
    """A grouped parameter's names each carry the group's description, never "See x."."""
    for page, text in site.items():
        assert not re.search(r"<td>\s*(<div[^>]*>\s*)?<p>See <code>\w+</code>\.</p>", text), page
    sweep = site["sweep"]
    depth = sweep[sweep.index("<code>depth</code>", sweep.index('id="dnnphase.SweepConfig"')):]
    assert "hidden layers" in depth[:1500]


def test_defaults_are_shown_as_values(site):
    """A default written by name in the source (``defaults.DEPTH``) shows its value."""
    sweep = site["sweep"]
    config = sweep[sweep.index('id="dnnphase.SweepConfig"'):]
    for written in ("DEPTH", "EPOCHS", "SWEEP_MEASURES", "DATASET", "OptimizerSettings",
                    "= kind"):
        assert written not in config, written
    signature = re.sub(r"<[^>]+>", "", config[:config.index("Parameters:")])
    for page, text in site.items():  # a unit written after the default is not the default
        for cell in re.findall(r"<td>\s*<code>([^<]*)</code>\s*</td>\s*</tr>", text):
            assert "  [" not in cell, (page, cell)
            assert not re.search(r"\b[A-Z][A-Z_]{2,}\b", cell), (page, cell)  # a constant's name
    assert re.search(r"depth: int = 7,", signature) and "optimizer: str = \"adam\"" \
        in signature, signature


def test_the_user_guide_is_in_the_site_and_linked_both_ways(site):
    for page in ("data", "measures", "fit", "claims"):
        assert f'href="guide/{page}.html"' in site["index"], page
    assert "fashion-mnist" in site["guide/data"] and "cifar10" in site["guide/data"]
    assert 'href="guide/data.html"' in site["sweep"]
    # a name of the packages in a guide page links to the reference
    assert 'href="../fit.html#springblock.fit.fit_spring"' in site["guide/fit"]
    assert 'href="../measure_model.html#dnnphase.metrics.fuzziness"' in site["guide/measures"]


def test_internal_methods_are_not_in_the_reference_nor_in_search(site):
    internal = ("preflight", "check_data", "model_knobs", "train_config", "check_device",
                "param_row", "fuzziness_of", "trace_ratio_of", "cdnv_of", "ncc_of",
                "regression_of")
    for page, text in site.items():
        for name in internal:
            assert f".{name}" not in text, (page, name)


def test_the_measures_module_is_a_module():
    from dnnphase import metrics
    from dnnphase.metrics import fuzziness  # noqa: F401  (was an attribute, not a module)

    assert importlib.import_module("dnnphase.metrics") is metrics


def test_grouped_parameters_are_shown_one_by_one(site):
    """griffe gives a group (``a, b : type``) the first name's annotation and default."""
    text = site["simulate"]
    mu_left = text[text.index("<code>mu_left</code>"):][:1500]
    default = re.search(r"<td>\s*<code>([^<]*)</code>\s*</td>\s*</tr>", mu_left)
    assert default and default[1] == "None", mu_left  # mu_right's is 0.0


def test_the_docstrings_examples_run():
    """The ``>>>`` examples of the entry points' docstrings give what they show."""
    import doctest

    for names in ENTRY_POINTS.values():
        for name in names:
            obj = public(name)
            finder = doctest.DocTestFinder(recurse=False)
            for test in finder.find(obj, name, globs={**vars(importlib.import_module(
                    obj.__module__)), "np": importlib.import_module("numpy")}):
                result = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS).run(test)
                assert result.failed == 0, name
