"""The ledger's row, its topics, its Markdown and its machine-readable record.

A row is computed from committed files each time the ledger is written, never typed in:
``python scripts/claims.py`` writes ``docs/claims.md`` and ``docs/claims.json`` and
``--check`` fails when the committed pages and the files disagree (a test runs it).
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from phasecore.checks import ConfigError

__all__ = ["SOURCES", "VERDICTS", "Claim", "collect", "count_line", "record", "render",
           "topics"]

#: The verdicts a row may carry, in the order a reader weighs them. "undecided": the
#: interval over seeds straddles the rule's threshold, so the point estimate's side is not
#: a verdict at this scale.
VERDICTS = ("holds", "partly", "differs", "cannot", "undecided")

#: Whose claim a row tests: the spring-block paper, He & Su, Galanti et al., or ours.
SOURCES = ("spring-block", "he-su", "galanti", "ours")


@dataclass(frozen=True)
class Claim:
    """One claim of a paper, and what the committed files say of it.

    Parameters
    ----------
    id : str
        Where the paper makes it: ``"Fig. S5"``, ``"S10"``, ``"Eq. 7"``.
    claim : str
        The claim in one line, in the paper's terms.
    command : str
        The command that regenerates the files the row reads.
    paper : str
        The paper's number, or ``"—"`` where it gives none.
    ours : str
        Our number, with its interval over seeds where seeds exist.
    verdict : str
        One of :data:`VERDICTS`, reached by a rule written down before the files were read.
    why : str
        What the verdict rests on; required for every verdict but "holds".
    files : tuple of str
        The committed files (relative to the checkout) the row is computed from.
    variants : dict of str to str
        The verdict the same rule reaches under each variant a referee would ask about
        (the other curvature definition, the authors' protocol, a rerun under other CPU
        kernels, ...), by the variant's name; empty where none applies.
    counts : bool
        Whether the row enters the count line: False for a row reading the same file as
        another, a reduced-scale twin of a paper-scale row, or a check of the simulator
        against its own theory (not a claim about networks).
    source : str
        Whose claim it is, one of :data:`SOURCES`; empty: the topic module's ``SOURCE``.
    rule : str
        The function that reaches the verdict, ``"module.function"`` of a topic module
        (:mod:`~.history` dates it and everything of this package it uses); empty: the
        function of this package that constructs the row.
    """

    id: str
    claim: str
    command: str
    paper: str
    ours: str
    verdict: str
    why: str = ""
    files: tuple[str, ...] = field(default=())
    variants: dict[str, str] = field(default_factory=dict)
    counts: bool = True
    source: str = ""
    rule: str = ""

    @property
    def robust(self) -> bool:
        """Every variant reaches the row's verdict (True where there is no variant)."""
        return all(v == self.verdict for v in self.variants.values())

    def __post_init__(self):
        if not self.rule:
            object.__setattr__(self, "rule", _builder())
        if self.verdict not in VERDICTS:
            raise ConfigError(f"verdict must be one of {', '.join(VERDICTS)} "
                              f"(got {self.verdict!r})")
        if self.verdict != "holds" and not self.why:
            raise ConfigError(f"{self.id}: a verdict of {self.verdict!r} needs its why")
        for name, verdict in self.variants.items():
            if verdict not in VERDICTS:
                raise ConfigError(f"{self.id}: variant {name!r}'s verdict must be one of "
                                  f"{', '.join(VERDICTS)} (got {verdict!r})")
        if self.source and self.source not in SOURCES:
            raise ConfigError(f"{self.id}: source must be one of {', '.join(SOURCES)} "
                              f"(got {self.source!r})")
        for name in ("id", "claim", "command", "paper", "ours"):
            if not getattr(self, name):
                raise ConfigError(f"{self.id or '?'}: {name} must not be empty")


def _builder() -> str:
    """``"module.function"`` of the innermost function of a topic module on the call stack
    (the one constructing a row, or calling a shared maker such as
    :func:`~.rules.pooled_claim`); "" when a row is made elsewhere."""
    here = Path(__file__).resolve().parent
    frame = sys._getframe(1)
    while frame is not None:
        path = Path(frame.f_code.co_filename).resolve()
        code = frame.f_code  # co_qualname from Python 3.11 (a method's class first)
        name = getattr(code, "co_qualname", code.co_name).split(".")[0]
        if path.parent == here and path.stem not in ("ledger", "history", "rules") \
                and not name.startswith("<"):
            return f"{path.stem}.{name}"
        frame = frame.f_back
    return ""


def topics() -> list:
    """The topic modules of this folder, in ``ORDER``."""
    package = importlib.import_module(__package__)
    found = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{__package__}.{info.name}")
        if hasattr(module, "claims") and hasattr(module, "TITLE"):
            found.append(module)
    return sorted(found, key=lambda m: (getattr(m, "ORDER", 100), m.__name__))


def collect(root: str | Path = ".") -> list[tuple[str, list[Claim]]]:
    """Every topic's title and rows, computed from the files under ``root`` (a checkout)."""
    root = Path(root)
    return [(module.TITLE, [c if c.source else replace(c, source=module.SOURCE)
                            for c in module.claims(root)]) for module in topics()]


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _standing(c: Claim, history: str) -> str:
    """Robust or fragile (and the variants that differ), the rule's history, and whether it
    counts."""
    parts = ["robust" if c.robust else "fragile: " + ", ".join(
        f"{name} → {v}" for name, v in c.variants.items() if v != c.verdict)]
    parts.append(history)
    if not c.counts:
        parts.append("not counted")
    return "; ".join(parts)


def count_line(rows: list[Claim]) -> str:
    """The ledger's count line: the counted rows' verdicts, each robust and fragile."""
    counted = [c for c in rows if c.counts]
    parts = []
    for v in VERDICTS:
        n = sum(c.verdict == v for c in counted)
        robust = sum(c.verdict == v and c.robust for c in counted)
        parts.append(f"{n} {v}" + (f" ({robust} robust, {n - robust} fragile)" if n else ""))
    return (f"**{len(rows)} claims, {len(counted)} counted: {', '.join(parts)}.**")


def render(sections: list[tuple[str, list[Claim]]], histories: dict | None = None,
           appendix: list[tuple[str, str]] | None = None) -> str:
    """``docs/claims.md``: a count of verdicts, then one table per topic.

    Parameters
    ----------
    sections : list of (str, list of Claim)
        :func:`collect`'s topics and rows.
    histories : dict, optional
        Per row, ``(id, claim)`` -> its rule's history (:mod:`~.history`'s texts); a row
        without one reads "history unavailable".
    appendix : list of (str, str), optional
        Sections after the tables, each a title and its text (the rules' own wording, which
        lives with the rules).
    """
    from phaseclaims import history as hist

    histories = histories or {}
    rows = [c for _, claims in sections for c in claims]
    state = {(c.id, c.claim): histories.get((c.id, c.claim), hist.UNKNOWN) for c in rows}
    tally = ", ".join(f"{sum(s == k for s in state.values())} {k}" for k in (
        hist.BEFORE, hist.AFTER, hist.REVISED, hist.NO_DATA, hist.UNKNOWN)
        if any(s == k for s in state.values()))
    variant_names = ", ".join(f"*{name}*" for name in
                              sorted({v for c in rows for v in c.variants}, key=str.lower))
    lines = [
        "# The papers' claims, tested",
        "",
        "<!-- Written by `python scripts/claims.py` from the committed result files; do not",
        "     edit by hand: `python scripts/claims.py --check` fails when they differ. The",
        "     same rows, machine-readable: docs/claims.json. -->",
        "",
        "One row per claim a computation can test: where the paper makes it, the claim, the",
        "command that regenerates the files the row reads, the paper's number, ours (with its",
        "95 % interval over seeds where seeds exist), a verdict — **holds**, **partly**,",
        "**differs**, **cannot** or **undecided** (the interval over seeds reaches two",
        "verdicts), with why — and its standing. A row is **robust** when every variant a",
        "referee would ask about (the other curvature definition, ...) reaches its verdict,",
        "**fragile** otherwise (the variants that differ are named). A claim that does not",
        "hold is a finding, reported as it came out.",
        "",
        "A variant is the row's own rule run on other files or with one choice changed; its",
        "numbers follow the reference's in the row. The He & Su and Galanti et al. rows read",
        "the authors' protocol at the committed (reduced) scale as their reference, and carry",
        "*our protocol* (the project's measurement and training), *other CPU kernels* (the",
        "reference rerun under another machine's kernels) and *papers' scale* (the authors'",
        "protocol at their 600 / 500 epochs and five seeds). A variant whose files are not",
        "computed yet is left out of the standing — the row says \"not computed\" and gives",
        "its command — so such a row is robust only on the variants it has. Variants in use:",
        f"{variant_names}.",
        "",
        "Each row's rule — the function that reaches its verdict and the ledger's code it",
        "uses — is dated from git against the first commit of every file the row reads",
        "(`phaseclaims.history`): *rule before data* when the rule's logic as it",
        "stands was committed before any of those files; *rule after data (logic unchanged",
        "since)* when the rule came later but its logic is the one it first had; *rule revised",
        "after data* otherwise (a new variant or note in a rule's code counts as a",
        "revision). A new rule lands in a commit before the results it judges.",
        f"Rows: {tally}.",
        "",
        "The rule for \"highest accuracy where the load curve is linear\" is in",
        "[the rule](#the-rule-for-highest-accuracy-where-linear) below; every topic's other",
        "rules open its module, `phaseclaims.<topic>` (He & Su's in `he_su`,",
        "Galanti et al.'s in `galanti`). Rows marked *not counted* test their claim on the",
        "same networks as another row (a file that is a copy of another's), are a",
        "reduced-scale twin of a paper-scale row, or check the simulator against its own",
        "theory.",
        "",
        count_line(rows),
        "",
    ]
    for title, claims in sections:
        lines += [f"## {title}", "",
                  "| id | claim | command | paper | ours | verdict | standing |",
                  "|---|---|---|---|---|---|---|"]
        for c in claims:
            verdict = f"**{c.verdict}**" + (f": {c.why}" if c.why else "")
            lines.append("| " + " | ".join(_cell(x) for x in (
                c.id, c.claim, f"`{c.command}`", c.paper, c.ours, verdict,
                _standing(c, state[(c.id, c.claim)]))) + " |")
        lines.append("")
    for title, text in appendix or []:
        lines += [f"## {title}", "", text.strip(), ""]
    return "\n".join(lines)


def record(sections: list[tuple[str, list[Claim]]], histories: dict | None = None) -> str:
    """``docs/claims.json``: the rows as a JSON list, one object a row (:func:`render`'s
    ``histories``)."""
    from phaseclaims import history as hist

    histories = histories or {}
    out = []
    for title, claims in sections:
        for c in claims:
            state = histories.get((c.id, c.claim), hist.UNKNOWN)
            out.append({
                "id": c.id, "paper": c.source, "section": title, "claim": c.claim,
                "verdict": c.verdict, "why": c.why, "variants": dict(c.variants),
                "robust": c.robust, "rule_before_data": hist.Dating(state).before,
                "rule_history": state, "rule": c.rule, "counts": c.counts,
                "files": list(c.files), "command": c.command, "paper_value": c.paper,
                "ours": c.ours})
    return json.dumps(out, indent=1, ensure_ascii=False) + "\n"
