"""The comparator: the spring-block chain against a network sweep.

One step of the comparison a module:

* ``alignment`` — the inputs checked, both diagrams oriented (every axis increasing the way
  the theory predicts) and matched by rank;
* ``agreement`` — label agreement (Cohen's kappa) and rank correlations of curvature, and two
  runs of one sweep against their seed noise (``sweeps_agree``);
* ``peaks`` — where test accuracy peaks, against curvature and along each alpha row;
* ``report`` — ``compare``: the report Dataset, and where the chain and the networks disagree;
* ``words`` — the report in words (``summary``);
* ``fitting`` — the chain fitted to every cell of a sweep (final curves or trajectories);
* ``dictionary`` — the paper's dictionary in numbers: fitted noise against the knob, fitted
  friction against alpha;
* ``surface`` — the chain's curvature surface kappa(mu->, s), tabulated once and read by a
  spline;
* ``baselines`` — the held-out prediction's baselines that know no mechanics, and the
  monotone least squares every fitted model shares;
* ``prediction`` — prediction, not description: the chain's map fitted on part of a diagram
  predicts the held-out cells, and one knob's rows another's;
* ``family`` — the family of chains (:mod:`springblock.fit.variants`) on trajectories and
  held-out cells.

May import: the folders of dnnphase below compare, springblock, and its own modules; none
of dnnphase.compare's other rooms (the scrutiny, the figures, the ledger and the presets
import it).
"""

__all__ = []
