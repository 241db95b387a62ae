"""The ledger of the papers' claims: each quantitative or qualitative claim a computation can
test, read from committed result files, with a verdict reached by a rule fixed in advance.

* :class:`Claim` — one row: the paper's id, the claim in one line, the command that
  regenerates the files it reads, the paper's number, ours (with its seed interval), the
  verdict (:data:`VERDICTS`) and why;
* :func:`collect` — every topic's rows from a checkout's committed files;
* :func:`render` — the rows as ``docs/claims.md`` (``python scripts/claims.py``).

A topic is a module of this package with ``TITLE`` (its section's heading), ``ORDER`` (its
place in the ledger), ``SOURCE`` (whose claims its rows are, :data:`~.ledger.SOURCES`)
and ``claims(root) -> list[Claim]``; :func:`collect` finds it by itself. The shared rule
for "highest accuracy where the load curve is linear" lives in :mod:`phaseclaims.rules`;
:mod:`phaseclaims.equiseparation` puts other readings of a row's chosen cell (He & Su's
Pearson r) through the same rule.

It judges claims about the spring-block chain and about the networks alike, so it sits above
both: may import :mod:`phasecore`, :mod:`springblock` and :mod:`dnnphase` (and its own
modules); none of them imports it, not even inside a function (``scripts/`` and the tests
do). :mod:`~phaseclaims.history` reads this package's past versions from git in each of its
homes (:data:`~phaseclaims.history.HOMES`: it lived in ``dnnphase/compare/claims/`` before).
"""

from phaseclaims.ledger import VERDICTS, Claim, collect, count_line, record, render

__all__ = ["VERDICTS", "Claim", "collect", "count_line", "record", "render"]
