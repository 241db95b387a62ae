"""Sphinx roles in docstrings as cross-references of the API reference (a griffe extension).

The docstrings name each other the Sphinx way (``:func:`simulate```,
``:class:`~springblock.config.ChainConfig```, ``:mod:`phasecore.sweeps```). mkdocs.yml
loads this extension (``tools/griffe_sphinx_roles.py:SphinxRoles``), which rewrites each
role, before the docstring is parsed, into an *optional* cross-reference of mkdocs-autorefs:
a link where the reference shows the target (under its public name or the module path it
is defined at), plain code where it does not (an implementation module, a private
constant). No role reaches the page as text.

A role's target is resolved the way Sphinx does: a dotted name starting with one of the
packages is absolute, anything else is looked up in the docstring's own scope (the
object, its class, its module and what the module imports). ``~`` shows the last
component only; ``title <target>`` shows the title.

It also escapes what Markdown would swallow in plain prose: a placeholder such as
``<knob>`` outside code would otherwise be read as an HTML tag and vanish, and two
asterisks of notation (``F*``, ``2**63``) would set the text between them in italics.
It shows fields written ``name : description`` in prose (before any numpy section) as a
list, where Markdown would run them into one paragraph. And it gives each name of a
grouped numpy parameter (``mu_right, mu_left : float``) an entry of its own, so that each
shows its own default and annotation, and the group's description.

A group whose description only names the class or function that documents it (``As
:class:`~dnnphase.networks.architecture.Architecture`'s.``: fields a configuration shares
with that class) takes each name's own description from that docstring, where it is
written once (its numpy Parameters, or its ``name : description`` fields).
"""

from __future__ import annotations

import html
import re

import griffe

#: Top-level packages whose dotted names are taken as absolute paths.
PACKAGES = ("springblock", "dnnphase", "phasecore")

#: ``:role:`target``` (Sphinx; ``py:`` domain prefix allowed).
ROLE = re.compile(r":(?:py:)?(?P<role>func|class|mod|data|meth|attr|exc|obj|const):"
                  r"`(?P<text>[^`]+)`")

#: A role, or an inline code span (kept as it is, roles inside it too).
TOKEN = re.compile(rf"{ROLE.pattern}|(?P<ticks>`+)(?s:.+?)(?P=ticks)")

#: ``<name>`` placeholders in prose; real inline HTML tags are left alone.
PLACEHOLDER = re.compile(r"<(/?)([A-Za-z_][\w.-]*)>")
#: ``*emphasis*`` / ``**strong**`` as written on purpose: opened before a word, closed after.
EMPHASIS = re.compile(r"(?<![\w*\\])(\*{1,2})(?=[^\s*])(.+?)(?<=[^\s*])\1(?![\w*])", flags=re.S)
#: Asterisks right after a word or bracket: notation (F*, 2**63), never emphasis.
STAR = re.compile(r"(?<=[\w)\]])\*+")
HTML_TAGS = frozenset({"a", "b", "br", "code", "em", "i", "kbd", "p", "pre", "span", "strong",
                       "sub", "sup", "autoref"})


#: Public names defined once in the loaded packages -> their path (for a bare name that
#: the docstring's module does not import, e.g. ``:class:`ConfigError```).
UNIQUE: dict[str, str] = {}


def resolve(obj: griffe.Object, target: str) -> str:
    """The identifier (a dotted path) that ``target``, written in ``obj``'s docstring, names."""
    target = target.lstrip(".")
    head, _, rest = target.partition(".")
    if head in PACKAGES:
        return target
    try:
        found = obj.resolve(head)  # the object's members, then its parents' (imports too)
    except (griffe.NameResolutionError, griffe.AliasResolutionError):
        found = UNIQUE.get(head)
    if found is None:
        return target
    return f"{found}.{rest}" if rest else found


def unique_names(collection) -> dict[str, str]:
    """Each public name (no leading ``_``) defined at exactly one path in the packages."""
    paths: dict[str, set[str]] = {}
    for package in PACKAGES:
        if package in collection.members:
            for obj in _objects(collection.members[package]):
                if not obj.is_module and not obj.name.startswith("_"):
                    paths.setdefault(obj.name, set()).add(obj.path)
    return {name: found.pop() for name, found in paths.items() if len(found) == 1}


def _reference(obj: griffe.Object, match: re.Match) -> str:
    text = match["text"].strip()
    titled = re.fullmatch(r"(?P<title>.+?)\s*<(?P<target>[^<>]+)>", text)
    if titled:
        title, target = titled["title"], titled["target"]
    else:
        target = text.lstrip("~")
        title = target.rsplit(".", 1)[-1] if text.startswith("~") else target
    identifier = resolve(obj, target.lstrip("~"))
    return (f'<autoref identifier="{html.escape(identifier)}" optional>'
            f"<code>{html.escape(title)}</code></autoref>")


def _escape_stars(text: str) -> str:
    """Asterisks attached to the end of a word (``F*``, ``2**63``) escaped, so that two of
    them do not turn the text between into emphasis; ``*emphasis*`` and bullets stay."""
    out, last = [], 0
    for match in EMPHASIS.finditer(text):
        out += [STAR.sub(lambda m: "\\*" * len(m[0]), text[last:match.start()]), match[0]]
        last = match.end()
    return "".join([*out, STAR.sub(lambda m: "\\*" * len(m[0]), text[last:])])


def _escape_placeholders(text: str) -> str:
    text = PLACEHOLDER.sub(lambda m: m[0] if m[2].lower() in HTML_TAGS
                           else f"&lt;{m[1]}{m[2]}&gt;", text)
    return _escape_stars(text)


def _inline(obj: griffe.Object, text: str) -> str:
    """Roles as references, placeholders escaped, inline code spans left as they are."""
    out, last = [], 0
    for token in TOKEN.finditer(text):
        out.append(_escape_placeholders(text[last:token.start()]))
        out.append(token[0] if token["ticks"] else _reference(obj, token))
        last = token.end()
    return "".join([*out, _escape_placeholders(text[last:])])


def rewrite(obj: griffe.Object, text: str) -> str:
    """``text`` with every role as a cross-reference and placeholders escaped, code left as
    it is: inline code spans and fenced blocks."""
    out, fenced = [], False
    for block in re.split(r"(^[ \t]*```[^\n]*$)", text, flags=re.M):
        if re.match(r"[ \t]*```", block):
            fenced = not fenced
            out.append(block)
        else:
            out.append(block if fenced else _inline(obj, block))
    return "".join(out)


def split_groups(text: str) -> str:
    """Each name of a grouped numpy parameter (``a, b : type``) as an entry of its own.

    griffe gives every name of a group the annotation and default of the first one found
    in the signature; apart, each name shows its own (the type written, if any, stays
    shared, and so does the description: a row that only pointed to another would leave
    the reader to find it).
    """
    lines, out, i, section = text.split("\n"), [], 0, None
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and re.fullmatch(r"-{3,}", lines[i + 1].strip()):
            section = line.strip()
        group = re.fullmatch(r"((?:\*{0,2}\w+, )+\*{0,2}\w+)( : .*)?", line)
        if section in ("Parameters", "Other Parameters") and group:
            body = []
            while i + 1 < len(lines) and (not lines[i + 1].strip()
                                          or lines[i + 1].startswith((" ", "\t"))):
                i += 1
                body.append(lines[i])
            trailing = []  # blank lines stay after the last name
            while body and not body[-1].strip():
                trailing.append(body.pop())
            for name in group[1].split(", "):
                out += [name + (group[2] or ""), *body]
            out += trailing
        else:
            out.append(line)
        i += 1
    return "\n".join(out)


FIELD = re.compile(r"(?P<names>\*{0,2}\w+(?:, \*{0,2}\w+)*) : (?P<text>\S.*)")

#: A parameter group's whole description naming the class that documents its names.
AS_OF = re.compile(r"As :(?:class|func):`~?(?P<target>[\w.]+)`'s\.")


def fields_of(text: str) -> dict[str, str]:
    """name -> description of a docstring's ``name : description`` fields (continued on
    indented lines; a group's names share it), whether in prose or a Parameters section
    (``name : type`` then an indented description)."""
    out, lines, i, section = {}, text.split("\n"), 0, None
    while i < len(lines):
        if i + 1 < len(lines) and re.fullmatch(r"-{3,}", lines[i + 1].strip()):
            section = lines[i].strip()
        numpy = section in ("Parameters", "Other Parameters")  # name : type, then the text
        field = (not numpy and FIELD.fullmatch(lines[i])) or (numpy and re.fullmatch(
            r"(?P<names>\w+(?:, \w+)*)(?: : (?P<type>.*))?", lines[i]))
        body = []
        while field and i + 1 < len(lines) and lines[i + 1].startswith((" ", "\t")) \
                and lines[i + 1].strip():
            i += 1
            body.append(lines[i].strip())
        if field and (body or field.groupdict().get("text")):
            first = field.groupdict().get("text")
            description = " ".join(([first] if first else []) + body)
            for name in field["names"].split(", "):
                out[name] = description
        i += 1
    return out


def inherit_groups(obj: griffe.Object, text: str, collection) -> str:
    """Each group of ``text``'s Parameters described only as ``As :class:`X`'s.``, one entry
    per name with X's description of that name (X's roles resolved where X is)."""
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        group = re.fullmatch(r"(\w+(?:, \w+)*)", lines[i])
        match = group and i + 1 < len(lines) and AS_OF.fullmatch(lines[i + 1].strip())
        home = match and collection.get(resolve(obj, match["target"]))
        if home is not None and home is not False and home.docstring is not None:
            fields = fields_of(home.docstring.value)
            indent = re.match(r"\s*", lines[i + 1])[0]
            for name in group[1].split(", "):
                out += [name, indent + rewrite(home, fields.get(name, lines[i + 1].strip()))]
            i += 2
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def list_fields(text: str) -> str:
    """Prose fields written ``name : description`` (continued on indented lines) before any
    numpy section, as a list of ``name`` — description: Markdown would run them together
    into one paragraph."""
    lines, out, in_list, fenced = text.split("\n"), [], False, False
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and re.fullmatch(r"-{3,}", lines[i + 1].strip()):
            return "\n".join(out + lines[i:])  # the sections are griffe's
        fenced ^= line.lstrip().startswith("```")
        field = not fenced and FIELD.fullmatch(line)
        if field:
            if not in_list and out and out[-1].strip():
                out.append("")  # a list needs a blank line after a paragraph
            out.append(f"* ``{field['names']}`` — {field['text']}")
            in_list = True
        else:
            in_list = in_list and line.startswith((" ", "\t"))
            out.append(line)
    return "\n".join(out)


def _objects(obj: griffe.Object):
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _objects(member)


class SphinxRoles(griffe.Extension):
    """Rewrites the roles of every docstring of a package once it is loaded."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        UNIQUE.clear()
        UNIQUE.update(unique_names(pkg.modules_collection))
        homes = {obj.path: obj for obj in _objects(pkg)}  # before any docstring is rewritten
        originals = {path: obj.docstring.value for path, obj in homes.items()
                     if obj.docstring is not None}
        for obj in _objects(pkg):
            if obj.docstring is not None:
                text = inherit_groups(obj, obj.docstring.value, _Originals(homes, originals))
                obj.docstring.value = split_groups(list_fields(rewrite(obj, text)))


class _Originals:
    """The package's objects by path, each with the docstring it was loaded with."""

    def __init__(self, homes: dict, originals: dict):
        self.homes, self.originals = homes, originals

    def get(self, path: str):
        if path not in self.originals:
            return None
        return _Home(self.homes[path], self.originals[path])


class _Home:
    """An object (to resolve its roles) with its docstring as loaded."""

    def __init__(self, obj: griffe.Object, text: str):
        self.obj, self.docstring = obj, griffe.Docstring(text)

    def resolve(self, name: str):
        return self.obj.resolve(name)
