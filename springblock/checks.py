"""The chain's parameter checks: one function per parameter, shared by every entry point.

:class:`springblock.config.ChainConfig` (and so both command lines and
:func:`springblock.simulate` / :func:`springblock.phase_diagram`) and the
public functions of :mod:`springblock.theory` call these same functions, so
the Python API refuses exactly what the command line refuses, with the same
one-line :class:`~phasecore.checks.ConfigError` naming the parameter.

Scale. The chain's forces are of order k |y| (the pull of the last spring on
a chain at rest). Two kinds of absurd but finite values are handled here:

* a step so short that a block pulled by k |y| moves by less than the
  rounding error of its position (``--step 1e-300``: nothing moves, every
  curvature is NaN) is refused (:data:`MIN_STEP_MODULUS`);
* noise or friction far above k |y| (``--noise 1e10``) is *flagged*, not
  refused, exactly as overflow is: the chains run, and the result marks them
  in ``out_of_scale`` with a warning (:func:`out_of_scale`). Where such a
  chain's positions overflow it is ``diverged`` instead.
"""

from __future__ import annotations

import numpy as np

from phasecore.checks import is_finite, is_int, require

__all__ = ["MIN_STEP_MODULUS", "OUT_OF_SCALE", "check_blocks", "check_chain", "check_modulus",
           "check_nonnegative", "check_nonnegative_array", "check_step", "check_target",
           "out_of_scale"]

#: Smallest step x modulus. One update x + eta F of a block pulled by F ~ k |y| moves it by
#: eta k |y|, and is rounded to ~2e-16 |y|: at eta k = 1e-10 that rounding is already
#: ~1e-4 of the moves near a stationary state (F ~ 1e-2 k |y|), and below ~1e-16 no block
#: moves at all (the load curve has no drop, every curvature is NaN).
MIN_STEP_MODULUS = 1e-10
#: Noise or friction above this many times k |y| is out of the chain's scale: a step's
#: noise or threshold dwarfs every spring force, so the load curve says nothing about
#: the chain (flagged in results, like overflow).
OUT_OF_SCALE = 1e6


def check_blocks(blocks) -> int:
    """The number of blocks L: an integer >= 1."""
    require(is_int(blocks) and blocks >= 1, "blocks", "an integer >= 1", blocks)
    return int(blocks)


def check_modulus(modulus) -> float:
    """The spring modulus k: finite and > 0 [force/length]."""
    require(is_finite(modulus) and modulus > 0, "modulus", "> 0", modulus)
    return float(modulus)


def check_target(target) -> float:
    """The target y: finite and not 0 (y = 0 gives a load curve with no drop) [length]."""
    require(is_finite(target) and target != 0, "target", "a finite number other than 0",
            target)
    return float(target)


def check_nonnegative(name: str, value) -> float:
    """A friction, noise level, decay rate or damping: finite and >= 0."""
    require(is_finite(value) and value >= 0, name, "a finite number >= 0", value)
    return float(value)


def check_nonnegative_array(name: str, values) -> np.ndarray:
    """Broadcasting forms (arrays of frictions or noise levels): every entry finite, >= 0."""
    arr = np.asarray(values, dtype=np.float64)
    require(bool(np.all(np.isfinite(arr))) and bool(np.all(arr >= 0)), name,
            "finite numbers >= 0", values)
    return arr


def check_step(step, modulus: float, limit: float, scheme: str) -> float:
    """The time step eta: in (0, ``limit``), the scheme's stability bound (``scheme`` says
    why, for the message), and at least MIN_STEP_MODULUS / k."""
    require(is_finite(step) and 0 < step < limit, "step", f"in (0, {limit:.6g}): {scheme}",
            step)
    low = MIN_STEP_MODULUS / modulus
    require(step >= low, "step",
            f">= {low:.3g} (= {MIN_STEP_MODULUS:g}/modulus): a shorter step moves a block by "
            "less than the rounding error of its position", step)
    return float(step)


def check_chain(blocks, mu_right, modulus=1.0, target=1.0) -> None:
    """What the noiseless chain of :mod:`springblock.theory` needs: L, mu->, k and y."""
    check_blocks(blocks)
    check_nonnegative("mu_right", mu_right)
    check_modulus(modulus)
    check_target(target)


def force_scale(modulus, target):
    """k |y|: the largest spring force of a chain at rest (the last spring's pull)."""
    return np.asarray(modulus, dtype=np.float64) * np.abs(np.asarray(target, dtype=np.float64))


def out_of_scale(noise, mu_right, mu_left, modulus, target) -> np.ndarray:
    """Per chain: noise or friction above OUT_OF_SCALE x k |y|? Broadcasts, bool (...)."""
    limit = OUT_OF_SCALE * force_scale(modulus, target)
    biggest = np.maximum(np.maximum(noise, mu_right), mu_left)
    return np.asarray(biggest > limit)
