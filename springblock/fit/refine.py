"""Refinement by simulation: correct the mean-field bias of a final-curve fit.

Defect correction (Gauss-Newton steps on the *simulated* residual, with the
mean-field Jacobian). The chain kernels are imported only when this runs,
so :mod:`springblock.fit` itself never compiles numba.
"""

from __future__ import annotations

import numpy as np

from springblock.fit.shapes import shape_of_positions

__all__ = ["refine_by_simulation", "simulated_shapes"]


def simulated_shapes(params, blocks: int, modulus: float, horizon: float, ratio: float,
                     step: float, seeds: int) -> np.ndarray:
    """Seed-mean normalised load curves (K, L+1) of simulated chains, params (K, 2) = (mu->, s).

    The same seeds for every parameter set (common random numbers): the
    difference between two sets is then a smooth function of the parameters.
    """
    from springblock.config import ChainConfig
    from springblock.ensemble import run_ensemble

    steps = int(round(horizon / step))
    configs = [ChainConfig(blocks=blocks, mu_right=float(mr), mu_left=float(ratio * mr),
                           noise=float(s), modulus=float(modulus), step=float(step),
                           steps=steps)
               for mr, s in params for _ in range(seeds)]
    seed_ids = np.tile(np.arange(seeds), len(params))
    x = run_ensemble(configs, seed_ids).positions.reshape(len(params), seeds, blocks)
    return shape_of_positions(x.mean(axis=1))


def refine_by_simulation(data, params, jac, free, lo, hi, simulate_shapes, iterations: int):
    """Gauss-Newton steps z <- z - (J^T J + lam diag)^-1 J^T (sim(z) - data).

    ``data`` (K, n) normalised curves, ``params`` (K, 2) the mean-field fit,
    ``jac`` (K, n, m) its Jacobian in the ``free`` columns, ``simulate_shapes``
    params (K, 2) -> simulated curves (K, n). The simulation differs from the
    theory by a smooth bias (<= 8e-4 RMS), so the theory Jacobian serves; a
    step is kept only where the simulated residual falls. Returns parameters,
    simulated curves, RMS residuals and whether anything changed.
    """
    p = params.copy()
    f = simulate_shapes(p)
    cost = np.sum((f - data) ** 2, axis=1)
    changed = np.zeros(len(p), dtype=bool)
    m = len(free)
    hess = np.einsum("knm,knp->kmp", jac, jac)
    damped = hess + np.eye(m) * (1e-3 * np.einsum("kmm->km", hess) + 1e-30)[:, None, :]
    for _ in range(iterations):
        grad = np.einsum("knm,kn->km", jac, f - data)
        z = np.clip(p[:, free] - np.linalg.solve(damped, grad[..., None])[..., 0], lo, hi)
        trial = p.copy()
        trial[:, free] = z
        f_trial = simulate_shapes(trial)
        cost_trial = np.sum((f_trial - data) ** 2, axis=1)
        better = cost_trial < cost
        p[better], f[better], cost[better] = trial[better], f_trial[better], cost_trial[better]
        changed |= better
    return p, f, np.sqrt(cost / data.shape[1]), changed
