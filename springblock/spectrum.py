"""The chain's spectrum and the time steps its explicit schemes take stably.

The springs couple the blocks through the Laplacian of a path of L blocks between two fixed
ends (the wall and the target); its eigenvalues bound the step of every explicit scheme of
:mod:`springblock.dynamics` and of the mean-field integrator
(:func:`springblock.theory.predict_positions`). Re-exported by :mod:`springblock.theory`.
"""

from __future__ import annotations

import math

import numpy as np

from springblock.checks import check_blocks, check_modulus, check_nonnegative

__all__ = ["laplacian_eigenvalues", "laplacian_extremes", "max_stable_step"]


def laplacian_eigenvalues(blocks: int) -> np.ndarray:
    """Eigenvalues 2 - 2 cos(j pi / (L+1)), j = 1..L, of the chain's Laplacian (L,).

    Parameters
    ----------
    blocks : int
        L, the number of blocks (>= 1).

    Returns
    -------
    numpy.ndarray
        (L,) the eigenvalues, increasing, in (0, 4).
    """
    check_blocks(blocks)
    j = np.arange(1, blocks + 1)
    return 2.0 - 2.0 * np.cos(j * np.pi / (blocks + 1))


def laplacian_extremes(blocks: int) -> tuple[float, float]:
    """(lambda_min, lambda_max) of :func:`laplacian_eigenvalues` without building the array.

    O(1) memory: a chain of 1e8 blocks must not allocate its spectrum just to
    check a time step. The same numbers as the array's ends, to rounding.

    Parameters
    ----------
    blocks : int
        L, the number of blocks (>= 1).

    Returns
    -------
    tuple of float
        (lambda_min, lambda_max) = (2 - 2 cos(pi / (L+1)), 2 - 2 cos(L pi / (L+1))).
    """
    check_blocks(blocks)
    return (2.0 - 2.0 * math.cos(math.pi / (blocks + 1)),
            2.0 - 2.0 * math.cos(blocks * math.pi / (blocks + 1)))


def max_stable_step(blocks: int, modulus: float = 1.0, dynamics: str = "overdamped",
                    damping: float = 0.0) -> float:
    """Largest time step for which the explicit scheme is linearly stable.

    * overdamped: eta k lambda_max < 2;
    * second order (semi-implicit Euler): eta gamma < 2 and
      eta^2 k lambda_max < 4 - 2 eta gamma;
    * Langevin (Euler-Maruyama): eta k lambda_max < gamma.
    lambda_max = 2 - 2 cos(L pi / (L+1)) < 4.

    Parameters
    ----------
    blocks : int
        L, the number of blocks (>= 1).
    modulus : float  [force/length], default 1.0
        k, the springs' stiffness (> 0).
    dynamics : str, default "overdamped"
        "overdamped", "second_order" or "langevin": the scheme (as
        :class:`~springblock.config.ChainConfig`'s ``dynamics``).
    damping : float  [1/time], default 0.0
        gamma, the second-order and Langevin schemes' damping (>= 0).

    Returns
    -------
    float
        The largest stable step eta [time] (0 for Langevin without damping).
    """
    check_modulus(modulus)
    check_nonnegative("damping", damping)
    w2 = modulus * laplacian_extremes(blocks)[1]
    if dynamics == "overdamped":
        return 2.0 / w2
    if dynamics == "second_order":
        # root of eta^2 w2 + 2 eta gamma - 4 = 0, also below 2/gamma
        root = (-damping + math.sqrt(damping * damping + 4.0 * w2)) / w2
        return min(root, 2.0 / damping) if damping > 0 else root
    if dynamics == "langevin":
        return damping / w2
    raise ValueError(f"dynamics: unknown {dynamics!r}")
