"""The ledger's row, its topics and its Markdown.

A row is computed from committed files each time the ledger is written, never typed in:
``python scripts/claims.py`` writes ``docs/claims.md`` and ``--check`` fails when the
committed page and the files disagree (a test runs it).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field, replace
from pathlib import Path

from phasecore.checks import ConfigError

__all__ = ["SOURCES", "VERDICTS", "Claim", "collect", "render", "topics"]

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

    @property
    def robust(self) -> bool:
        """Every variant reaches the row's verdict (True where there is no variant)."""
        return all(v == self.verdict for v in self.variants.values())

    def __post_init__(self):
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


def render(sections: list[tuple[str, list[Claim]]]) -> str:
    """``docs/claims.md``: a count of verdicts, then one table per topic."""
    rows = [c for _, claims in sections for c in claims]
    counts = ", ".join(f"{sum(c.verdict == v for c in rows)} {v}" for v in VERDICTS)
    lines = [
        "# The papers' claims, tested",
        "",
        "<!-- Written by `python scripts/claims.py` from the committed result files; do not",
        "     edit by hand: `python scripts/claims.py --check` fails when they differ. -->",
        "",
        "One row per claim a computation can test: where the paper makes it, the claim, the",
        "command that regenerates the files the row reads, the paper's number, ours (with its",
        "95 % interval over seeds where seeds exist) and a verdict — **holds**, **partly**,",
        "**differs** or **cannot** (with why). Every rule behind a verdict was fixed before the",
        "files it reads were computed; a claim that does not hold is a finding, reported as it",
        "came out. The rule for \"highest accuracy where the load curve is linear\" is in",
        "[the rule](#the-rule-for-highest-accuracy-where-linear) below; every topic's other",
        "rules open its module, `dnnphase.compare.claims.<topic>` (He & Su's in `he_su`,",
        "Galanti et al.'s in `galanti`).",
        "",
        f"**{len(rows)} claims: {counts}.**",
        "",
    ]
    for title, claims in sections:
        lines += [f"## {title}", "",
                  "| id | claim | command | paper | ours | verdict |",
                  "|---|---|---|---|---|---|"]
        for c in claims:
            verdict = f"**{c.verdict}**" + (f": {c.why}" if c.why else "")
            lines.append("| " + " | ".join(_cell(x) for x in (
                c.id, c.claim, f"`{c.command}`", c.paper, c.ours, verdict)) + " |")
        lines.append("")
    from dnnphase.compare.claims.rules import RULE_TEXT
    lines += ["## The rule for highest accuracy where linear", "", RULE_TEXT.strip(), ""]
    return "\n".join(lines)
