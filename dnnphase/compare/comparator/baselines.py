"""The held-out prediction's baselines that know no mechanics, and the monotone least squares
every fitted model of :mod:`dnnphase.compare.comparator.prediction` shares.

A diagram is a matrix (R, C) of seed-mean curvatures: rows alpha increasing, columns noisier to
the right; ``train`` (R, C) bool marks the cells a model may see.

* :func:`fit_additive_map` — a_i + b_j, monotone (R + C - 1 parameters);
* :func:`fit_saturating_map` — d tanh(a_i + b_j), monotone (R + C);
* :func:`local_mean` — no parameters: each cell the mean of its nearest training cells in grid
  index;
* :func:`row_interpolation` — no parameters: each cell the line, in grid index, through the
  nearest training cells of its own row (:func:`extend_linear`);
* :func:`best_least_squares` — a monotone map's least squares, made well posed: every
  parameter the data leave free (a noise on the chain's plateau, a row whose cells all sit on
  the tanh's plateau, and on the checkerboard split the relative level of the two sublattices
  of training cells, which share no row or column) is fixed by a small penalty on the
  sequences' second differences (:data:`TIE_BREAK`: the smoothest rows and columns that fit
  as well), the tolerances are tight enough to reach that unique point, and of several starts
  the best is chosen by rounded cost and then rounded parameters, so that neither the order of
  the starts nor a last-bit change of the data (another CPU's arithmetic) moves the answer.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares, lsq_linear

from phasecore.checks import is_finite, require

__all__ = ["TIE_BREAK", "TOLERANCE", "best_least_squares", "check_matrix", "extend_linear",
           "fill_untrained", "fit_additive_map", "fit_saturating_map", "local_mean", "monotone",
           "penalised_cost", "row_interpolation", "smoothness"]

#: Weight of the tie-break: half TIE_BREAK times the sum of the squared second differences of
#: each monotone sequence (rows, columns; differences of consecutive steps) is added to the cost
#: (half the sum of squared residuals, curvature units). Small against the data where they
#: determine a parameter, the only curvature of the cost where they do not: there it continues
#: the neighbours' trend (a noise on the chain's plateau where the trend of the other columns
#: puts it, not anywhere along it; the checkerboard's two sublattices at the level where rows
#: and columns are smoothest). Second, not first, differences: a sublattice offset puts a
#: zigzag into every sequence, which they see, and a steady trend, which they do not.
TIE_BREAK = 1e-4
#: Relative tolerances (scipy's ftol, xtol, gtol) of every nonlinear fit: tight enough that the
#: fit reaches the tie-broken optimum, not a point on the way to it.
TOLERANCE = 1e-12
#: Significant digits to which two starts' costs count as equal; then the smaller rounded
#: parameter vector (lexicographic) is kept, whatever the starts' order.
TIE_DIGITS = 9


def check_matrix(curv, train) -> tuple[np.ndarray, np.ndarray]:
    """``curv`` (R, C) as float and ``train`` (R, C) as bool, refused unless at least 2 x 2,
    finite on every training cell, with at least 2 training cells."""
    curv = np.asarray(curv, dtype=float)
    train = np.asarray(train, dtype=bool)
    require(curv.ndim == 2 and min(curv.shape) >= 2, "curvature",
            "a (rows, columns) array with at least 2 of each", curv.shape)
    require(train.shape == curv.shape, "train", f"a boolean mask of shape {curv.shape}",
            train.shape)
    require(bool(np.isfinite(curv[train]).all()), "curvature",
            "finite on every training cell", "NaN or inf on a training cell")
    require(int(train.sum()) >= 2, "train", "a mask with at least 2 training cells",
            int(train.sum()))
    return curv, train


def monotone(first: float, steps, sign: float) -> np.ndarray:
    """first, first + sign*steps[0], ... (len(steps) + 1,): monotone for steps >= 0."""
    return first + sign * np.concatenate([[0.0], np.cumsum(steps)])


def fill_untrained(values, trained) -> np.ndarray:
    """``values`` (n,) with the entries of untrained rows / columns replaced by the linear
    interpolation, in index, of the nearest trained ones (the end value beyond the ends)."""
    values, trained = np.asarray(values, dtype=float), np.asarray(trained, dtype=bool)
    index = np.arange(values.size)
    return np.interp(index, index[trained], values[trained])


def extend_linear(values, trained) -> np.ndarray:
    """``values`` (n,) with the untrained entries replaced by the line, in index, through the
    nearest trained ones: the linear interpolation between them, and beyond the trained ones
    the line through the two nearest continued (the one trained value where there is only one;
    all NaN where there is none). Between trained entries it is :func:`fill_untrained`."""
    values, trained = np.asarray(values, dtype=float), np.asarray(trained, dtype=bool)
    require(values.ndim == 1 and trained.shape == values.shape, "trained",
            f"a boolean mask of shape {values.shape}", trained.shape)
    known = np.nonzero(trained)[0]
    if known.size == 0:
        return np.full(values.shape, np.nan)
    index = np.arange(values.size)
    out = np.interp(index, known, values[known])
    if known.size >= 2:
        for ends, (a, b) in (((index < known[0]), known[:2]), ((index > known[-1]), known[-2:])):
            slope = (values[b] - values[a]) / (b - a)
            out[ends] = values[a] + slope * (index[ends] - a)
    return out


def smoothness(size: int, runs) -> np.ndarray:
    """The tie-break's operator (K, ``size``): one row per pair of consecutive monotone steps,
    step[k + 1] - step[k] (a second difference of the sequence). ``runs``: (first index,
    count) of each sequence's steps in the parameter vector."""
    rows = []
    for first, count in runs:
        for k in range(first, first + count - 1):
            row = np.zeros(size)
            row[k], row[k + 1] = -1.0, 1.0
            rows.append(row)
    return np.array(rows).reshape(len(rows), size)


def penalised_cost(residual, smooth: np.ndarray):
    """p -> 1/2 |residual(p)|^2 + TIE_BREAK/2 |smooth p|^2, the cost every fit minimises."""
    def cost(p):
        r, q = residual(p), smooth @ p
        return 0.5 * (np.dot(r, r) + TIE_BREAK * np.dot(q, q))
    return cost


def best_least_squares(residual, starts, lower, upper, smooth: np.ndarray, *,
                       max_nfev: int | None = None) -> tuple[np.ndarray, float]:
    """Minimise :func:`penalised_cost` from each start; keep the best.

    ``residual``: p (P,) -> residuals (N,); ``starts``: starting vectors (P,) each; ``lower`` /
    ``upper``: bounds, scalars or (P,); ``smooth`` (K, P): the tie-break's operator
    (:func:`smoothness`). Returns (p (P,), the cost 1/2 |residual(p)|^2 without the tie-break).
    The best: the smallest penalised cost to :data:`TIE_DIGITS` significant digits, then the
    smallest parameters rounded likewise — a choice that does not depend on the order of
    ``starts``.
    """
    weight = np.sqrt(TIE_BREAK) * np.asarray(smooth, dtype=float)

    def penalised(p):
        return np.concatenate([residual(p), weight @ p])

    found = []
    for p0 in starts:
        p0 = np.clip(np.asarray(p0, dtype=float), lower, upper)
        res = least_squares(penalised, p0, bounds=(lower, upper), method="trf",
                            ftol=TOLERANCE, xtol=TOLERANCE, gtol=TOLERANCE,
                            max_nfev=max_nfev or 200 * p0.size)
        key = (float(f"{res.cost:.{TIE_DIGITS}g}"),
               tuple(float(f"{x:.{TIE_DIGITS}g}") for x in res.x))
        found.append((key, res.x))
    p = min(found, key=lambda f: f[0])[1]
    r = residual(p)
    return p, float(0.5 * np.dot(r, r))


def fit_additive_map(curv, train) -> dict[str, np.ndarray | float]:
    """Fit the additive monotone baseline a_i + b_j to the training cells (exact: a bounded
    linear least-squares problem, solved by an active-set method, with the tie-break of
    :func:`best_least_squares`).

    Shapes as :func:`dnnphase.compare.comparator.prediction.fit_chain_map`. Returns ``row`` (R,) a
    (non-decreasing in alpha), ``column`` (C,) b (non-decreasing in noisiness, b_0 = 0),
    ``fitted`` (R, C) and ``cost``; R + C - 1 parameters. Untrained rows / columns:
    :func:`fill_untrained`.
    """
    curv, train = check_matrix(curv, train)
    rows, cols = curv.shape
    i, j = np.nonzero(train)
    # a_i = a_0 + sum_{k <= i} da_k, b_j = sum_{k <= j} db_k: one column per parameter
    design = np.concatenate([np.ones((i.size, 1)),
                             (i[:, None] >= np.arange(1, rows)[None, :]).astype(float),
                             (j[:, None] >= np.arange(1, cols)[None, :]).astype(float)], axis=1)
    # the tie-break as extra rows sqrt(TIE_BREAK) * (second difference) = 0
    n = design.shape[1]
    tie = np.sqrt(TIE_BREAK) * smoothness(n, [(1, rows - 1), (rows, cols - 1)])
    lower = np.concatenate([[-np.inf], np.zeros(n - 1)])
    res = lsq_linear(np.vstack([design, tie]), np.concatenate([curv[i, j], np.zeros(len(tie))]),
                     bounds=(lower, np.inf), method="bvls")
    a = monotone(res.x[0], res.x[1:rows], 1.0)
    b = monotone(0.0, res.x[rows:], 1.0)
    a, b = fill_untrained(a, train.any(axis=1)), fill_untrained(b, train.any(axis=0))
    return {"row": a, "column": b, "fitted": a[:, None] + b[None, :],
            "cost": float(0.5 * np.sum((design @ res.x - curv[i, j]) ** 2))}


def _saturating_unpack(p: np.ndarray, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    return monotone(p[0], p[1:rows], 1.0), monotone(0.0, p[rows:rows + cols - 1], 1.0)


def fit_saturating_map(curv, train, *, centre: float | None = 0.0,
                       start: dict | None = None) -> dict[str, np.ndarray | float]:
    """Fit the saturating baseline c + d tanh(a_i + b_j) to the training cells: the additive
    one through a fixed S-shaped link, so that it can level off as the chain's curvature does,
    knowing nothing of mechanics.

    Shapes as :func:`dnnphase.compare.comparator.prediction.fit_chain_map`. a non-decreasing
    in alpha, b
    non-decreasing in noisiness with b_0 = 0, d > 0; the centre c is ``centre`` (default 0, the
    linear load curve: R + C parameters, as many as the chain) or, if None, fitted too
    (R + C + 1). Returns ``row`` (R,), ``column`` (C,), ``centre`` c, ``scale`` d, ``fitted``
    (R, C), ``cost``. :func:`best_least_squares` from the additive fit squeezed into the link at
    three scales; with ``start`` (an earlier result of this function on the same diagram's
    shape and ``centre``) from that one alone, to refit slightly changed data.
    """
    curv, train = check_matrix(curv, train)
    require(centre is None or is_finite(centre), "centre", "a finite number or None", centre)
    require(start is None or (isinstance(start, dict) and np.shape(start.get("row")) ==
                              (curv.shape[0],) and np.shape(start.get("column")) ==
                              (curv.shape[1],)),
            "start", "None or an earlier fit with row (R,) and column (C,)",
            type(start).__name__)
    rows, cols = curv.shape
    i, j = np.nonzero(train)
    y = curv[i, j]
    additive = fit_additive_map(curv, train)
    free = centre is None
    mid = 0.5 * (y.max() + y.min()) if free else float(centre)

    def residual(p):
        a, b = _saturating_unpack(p, rows, cols)
        return (p[-2] if free else mid) + p[-1] * np.tanh(a[i] + b[j]) - y

    lower = np.concatenate([[-np.inf], np.zeros(rows + cols - 2), [-np.inf] * free, [1e-6]])
    smooth = smoothness(lower.size, [(1, rows - 1), (rows, cols - 1)])
    spread = np.max(np.abs(y - mid)) + 1e-3
    starts = []
    if start is not None:
        a, b = np.asarray(start["row"], float), np.asarray(start["column"], float)
        starts.append(np.concatenate([[a[0]], np.diff(a), np.diff(b),
                                      [start["centre"]] * free, [start["scale"]]]))
    for widen in (1.2, 2.0, 4.0) if start is None else ():
        scale = widen * spread
        a, b = (additive["row"] - mid) / scale, additive["column"] / scale
        starts.append(np.concatenate([[a[0]], np.diff(a), np.diff(b), [mid] * free, [scale]]))
    p, cost = best_least_squares(residual, starts, lower, np.inf, smooth)
    a, b = _saturating_unpack(p, rows, cols)
    a, b = fill_untrained(a, train.any(axis=1)), fill_untrained(b, train.any(axis=0))
    c, d = (float(p[-2]) if free else mid), float(p[-1])
    return {"row": a, "column": b, "centre": c, "scale": d,
            "fitted": c + d * np.tanh(a[:, None] + b[None, :]), "cost": cost}


def local_mean(curv, train) -> np.ndarray:
    """The parameter-free baseline: every cell (R, C) predicted as the mean of the training
    cells nearest to it in grid index (city-block distance |di| + |dj|, the smallest at which
    there is one), NaN if there are none.

    On the checkerboard split a held-out cell's nearest training cells are its 4 neighbours
    (2 or 3 at an edge, fewer where a neighbour is not usable); on the every-other-column split
    they are the cells left and right of it, so the prediction is the linear interpolation
    along the knob, in grid index — the rule the fitted models' held-out columns follow. Where
    a neighbour is missing the next nearest training cells stand in, ties averaged. A training
    cell is predicted by itself (distance 0). Units: those of ``curv``.
    """
    curv = np.asarray(curv, dtype=float)
    train = np.asarray(train, dtype=bool)
    require(curv.ndim == 2 and train.shape == curv.shape, "train",
            f"a boolean mask of the curvature's shape {curv.shape}", train.shape)
    ti, tj = np.nonzero(train & np.isfinite(curv))
    out = np.full(curv.shape, np.nan)
    if ti.size == 0:
        return out
    i, j = np.indices(curv.shape)
    # (R, C, T) city-block distances from every cell to every training cell
    dist = np.abs(i[..., None] - ti) + np.abs(j[..., None] - tj)
    nearest = dist == dist.min(axis=-1, keepdims=True)
    return (nearest * curv[ti, tj]).sum(axis=-1) / nearest.sum(axis=-1)


def row_interpolation(curv, train) -> np.ndarray:
    """The parameter-free baseline along the knob alone: every cell (R, C) predicted from the
    training cells of its own row, by :func:`extend_linear` in grid index (the linear
    interpolation between the nearest training cells left and right of it; beyond the row's
    first or last training cell, the line through its two nearest continued). A row with no
    finite training cell is predicted by :func:`local_mean`. A training cell is predicted by
    itself. Units: those of ``curv``.

    On the every-other-column split it is the local mean where both neighbouring cells of the
    row are usable (both interpolate between the columns left and right; where one is not, the
    local mean takes the next nearest cells, this the row's line); on the checkerboard it
    leaves the cells above and below out, which the local mean averages in.
    """
    curv = np.asarray(curv, dtype=float)
    train = np.asarray(train, dtype=bool)
    require(curv.ndim == 2 and train.shape == curv.shape, "train",
            f"a boolean mask of the curvature's shape {curv.shape}", train.shape)
    known = train & np.isfinite(curv)
    out = np.array([extend_linear(row, mask) for row, mask in zip(curv, known, strict=True)])
    empty = ~known.any(axis=1)
    if empty.any():
        out[empty] = local_mean(curv, train)[empty]
    return out
