"""The chain's phase-diagram defaults in one place (overdamped chain, paper Eqs. 5–6; numba-free).

The recommended grid — measured: a clean concave -> linear -> convex
diagram with standard error <= 0.0013 at 10 seeds — 6 friction rows x 8 noise
columns at the horizon and friction ratio below (L = 7, k = 1 and step 0.01 are
the single chain's own defaults, the fields of :class:`springblock.config.ChainConfig`).
"""

__all__ = ["CHAINS_PER_CHUNK", "COLS", "HORIZON", "MU_LEFT_RATIO", "ROWS", "SEEDS", "STEPS"]

ROWS = "mu_right=0:0.03:6"
COLS = "noise=0:0.028:8"
SEEDS = 10
#: Horizon T (time units, = steps x step) of the diagram, and the one at which fitted
#: chains are observed (:func:`springblock.fit.fit_spring`).
HORIZON = 1000.0
STEPS = 100_000  # with ChainConfig's default step 0.01: T = HORIZON (a test holds them equal)
#: mu<- / mu->: in every cell of the diagram, and fixed in the final-curve fit.
MU_LEFT_RATIO = 2.0
#: Chains per resumable chunk: enough to keep the kernel's threads busy, few
#: enough that an interruption loses little.
CHAINS_PER_CHUNK = 256
