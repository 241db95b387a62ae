"""The chain's kernels (springblock.dynamics) give the same bits however they are called:
a whole-run form and its slice kernel over every chain, and one call of n steps and the
same steps cut into calls (what the runner relies on to return to Python between slices)."""

import numpy as np
import pytest

from springblock import dynamics as dyn
from springblock.randomness import seed_states

#: (name, whole-run form, slice kernel, whether it carries velocities)
KERNELS = [("overdamped", dyn.overdamped, dyn.overdamped_slice, False),
           ("second_order", dyn.second_order, dyn.second_order_slice, True),
           ("langevin", dyn.langevin, dyn.langevin_slice, True)]
BLOCKS, STEPS, EVERY = 6, 600, 50


def _chains():
    """Three chains with their own friction, noise, truncation and decay; positions
    ``x``, velocities ``v`` and random states ``states`` at the start."""
    params = np.zeros((3, dyn.N_PARAMS))
    params[:, dyn.P_MU_RIGHT] = [0.01, 0.02, 0.0]
    params[:, dyn.P_MU_LEFT] = [0.02, 0.03, 0.0]
    params[:, dyn.P_NOISE] = [0.05, 0.1, 0.02]
    params[:, dyn.P_MODULUS] = [1.0, 0.5, 1.0]
    params[:, dyn.P_TARGET] = 1.0
    params[:, dyn.P_STEP] = 0.05
    params[:, dyn.P_DAMPING] = [0.7, 1.0, 2.0]
    params[:, dyn.P_TRUNCATION] = [2.0, np.inf, 3.0]
    params[:, dyn.P_DECAY] = [0.0, 0.2, 0.0]
    x = np.zeros((3, BLOCKS))
    return params, x, np.zeros_like(x), seed_states(np.array([3, 1, 4]))


def _run(kernel, velocities, params, x, v, states, args, traj=None):
    """Call ``kernel``; the recorded rows are written into ``traj`` (a new one if None)."""
    traj = np.zeros((len(x), STEPS // EVERY + 1, BLOCKS)) if traj is None else traj
    kernel(*((x, v) if velocities else (x,)), states, params, *args, traj)
    return traj


@pytest.mark.parametrize("synchronous", [False, True], ids=["independent", "synchronous"])
@pytest.mark.parametrize(("name", "whole", "sliced", "velocities"), KERNELS,
                         ids=[k[0] for k in KERNELS])
def test_every_entry_point_of_a_kernel_gives_the_same_bits(name, whole, sliced, velocities,
                                                            synchronous):
    params, x, v, states = _chains()
    traj = _run(whole, velocities, params, x, v, states, (STEPS, 0, synchronous, EVERY))
    assert np.isfinite(x).all() and np.abs(x).max() > 0.1  # the chains moved

    params, x2, v2, states2 = _chains()
    chains = np.arange(3, dtype=np.int64)
    traj2 = np.zeros_like(traj)
    for step0, n in ((0, 1), (1, 149), (150, 250), (400, STEPS - 400)):
        _run(sliced, velocities, params, x2, v2, states2, (chains, n, step0, synchronous, EVERY),
             traj2)
    assert x2.tobytes() == x.tobytes() and v2.tobytes() == v.tobytes()
    assert states2.tobytes() == states.tobytes()
    assert traj2[:, 1:].tobytes() == traj[:, 1:].tobytes()

    # one chain alone, in two calls, is the same chain as among the others
    params, x3, v3, states3 = _chains()
    for step0, n in ((0, 300), (300, STEPS - 300)):
        _run(sliced, velocities, params, x3, v3, states3,
             (np.array([1], dtype=np.int64), n, step0, synchronous, EVERY))
    assert x3[1].tobytes() == x[1].tobytes() and not x3[0].any()
