"""The chain's phase-diagram defaults in one place (DESIGN §2.1, numba-free).

DESIGN's recommended grid — measured: a clean concave -> linear -> convex
diagram with standard error <= 0.0013 at 10 seeds — 6 friction rows x 8 noise
columns, mu<- = 2 mu->, L = 7, k = 1, step 0.01 and T = 1000. The single
chain's own defaults are the fields of :class:`springblock.config.ChainConfig`.
"""

ROWS = "mu_right=0:0.03:6"
COLS = "noise=0:0.028:8"
SEEDS = 10
STEPS = 100_000  # with the default step 0.01: T = 1000
MU_LEFT_RATIO = 2.0
#: Chains per resumable chunk: enough to keep the kernel's threads busy, few
#: enough that an interruption loses little.
CHAINS_PER_CHUNK = 256
