"""The user guide in the API reference's site (an mkdocs hook; mkdocs.yml ``hooks``).

The guide's documents stay where a reader of the repository finds them (docs/data.md,
docs/measures.md, docs/fit.md, docs/claims.md: ``GUIDE``); the site shows them as
``guide/<name>.html`` beside the reference pages of docs/api/. In a guide page, a code span
that names a dotted path of the packages (``dnnphase.sweep``,
``springblock.fit.fit_spring(curve, ...)``, ``dnnphase.measures.separation_numpy``), or a
function or class the reference shows under one public path only (``fit_spring``,
``SweepConfig(protocol=...)``), becomes an optional cross-reference: a link where the
reference shows that name (under its public path or the path it is defined at), plain code
where it does not. In a reference page, a mention of one of the guide's documents
(``docs/data.md``) becomes a link to its page.
"""

from __future__ import annotations

import html
import importlib
import inspect
import re
from pathlib import Path

from mkdocs.structure.files import File

#: The guide's documents, docs/<name>.md, each shown as guide/<name>.html.
GUIDE = ("data", "measures", "fit", "claims")

#: The modules whose ``__all__`` the reference shows (tests/cross/test_api_reference.py).
DOORS = ("springblock", "springblock.theory", "springblock.fit", "dnnphase", "dnnphase.metrics",
         "dnnphase.sweeps.tune", "dnnphase.compare", "phasecore")
#: An implementation module shown whole under a public name.
MODULES = {"dnnphase.measures.separation_numpy": "dnnphase.metrics"}

#: A code span naming a dotted path, or a bare name, maybe called: `pkg.mod.name(...)`.
NAMED = re.compile(r"(?<!`)`(?P<name>[A-Za-z_]\w*(?:\.\w+)*)(?P<call>\([^`]*\))?`(?!`)")
PACKAGE = re.compile(r"(?:springblock|dnnphase|phasecore|phaseclaims)\.")

#: name as written -> identifier: implementation paths and unique bare names (on_config).
TARGETS: dict[str, str] = {}


def targets() -> dict[str, str]:
    """The identifier of each name the guide may write other than as a public dotted path:
    a function's or class's defining path, its bare name where one public path has it."""
    found, bare = dict(MODULES), {}
    for door in DOORS:
        module = importlib.import_module(door)
        for name in module.__all__:
            obj = getattr(module, name)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            found[f"{obj.__module__}.{obj.__qualname__}"] = f"{door}.{name}"
            bare.setdefault(name, set()).add(f"{door}.{name}")
    found.update({name: paths.pop() for name, paths in bare.items() if len(paths) == 1})
    return found


def on_config(config):
    TARGETS.clear()
    TARGETS.update(targets())
    return config
#: A fenced code block (left alone).
FENCE = re.compile(r"^[ \t]*```.*?^[ \t]*```[ \t]*$", flags=re.M | re.S)
#: A block of lines each indented by four spaces or a tab: an indented code block.
INDENTED = re.compile(r"(?:(?: {4}|\t)[^\n]*(?:\n|$))+")
#: A guide document mentioned in a reference page's HTML, as code or text, not in a link.
MENTION = re.compile(r"(?<![\w/])(<code>)?docs/(?P<name>" + "|".join(GUIDE)
                     + r")\.md(?(1)</code>)(?![^<]*</a>)")


def on_files(files, config):
    """The guide's documents join the site's files, from docs/ (next to docs_dir)."""
    docs = Path(config["docs_dir"]).parent
    for name in GUIDE:
        files.append(File.generated(config, f"guide/{name}.md",
                                    abs_src_path=str(docs / f"{name}.md")))
    return files


def link_names(markdown: str) -> str:
    """Each code span naming a dotted path as an optional cross-reference (fences aside)."""
    def one(match: re.Match) -> str:
        name = TARGETS.get(match["name"], match["name"])
        if not PACKAGE.match(name):
            return match[0]
        return (f'<autoref identifier="{name}" optional><code>'
                f'{html.escape(match[0][1:-1])}</code></autoref>')

    def prose(text: str) -> str:  # indented code blocks (every line indented) left alone
        blocks = re.split(r"(\n[ \t]*\n)", text)
        return "".join(block if INDENTED.fullmatch(block) else NAMED.sub(one, block)
                       for block in blocks)

    out, last = [], 0
    for fence in FENCE.finditer(markdown):
        out += [prose(markdown[last:fence.start()]), fence[0]]
        last = fence.end()
    return "".join([*out, prose(markdown[last:])])


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri.startswith("guide/"):
        return link_names(markdown)
    return markdown


def on_page_content(content, page, config, files):
    """In a reference page, ``docs/<guide>.md`` as a link to the guide's page."""
    if page.file.src_uri.startswith("guide/"):
        return content
    return MENTION.sub(lambda m: f'<a href="guide/{m["name"]}.html">{m[0]}</a>', content)
