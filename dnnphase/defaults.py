"""Every default of the network side in one place (the paper's setup).

The command line, :class:`dnnphase.sweeps.sweep.SweepConfig`, the trainer, the measures
and the presets all read these, so changing the paper configuration is one edit.
The knobs' ranges and default grids are in :mod:`dnnphase.knobs`, the measures'
names in :data:`dnnphase.measures.separation_numpy.MEASURES`.
"""

__all__ = ["CHANNELS", "DATASET", "DEPTH", "EPOCHS", "FASHION_MNIST_DIR", "FASHION_MNIST_PACKAGE",
           "KERNEL_SIZE", "LOSS_THRESHOLD", "LR", "MAX_SEEDS", "MEASURE", "MIN_CHUNKS",
           "MODELS_PER_CHUNK", "MODELS_PER_CHUNK_CUDA", "NORM", "PATIENCE", "PYTHON_SCHEDULER",
           "REL_TOL", "SCHEDULER", "SWEEP_MEASURES", "TUNE_ROUNDS", "TUNE_SEEDS",
           "TUNE_TOLERANCE", "TUNE_VALUES_PER_ROUND", "TUNE_WITHIN_SE", "WIDTH"]

DEPTH = 7  # hidden layers L
WIDTH = 100  # hidden width n
CHANNELS = 16  # the CNN's conv output channels, every hidden layer
KERNEL_SIZE = 3  # the CNN's convolutions
NORM = "batchnorm"  # hidden-layer normalisation (SM S3): BatchNorm on the input and every layer
DATASET = "mnist5k"  # 2 560 training digits, resized to 10 x 10
#: Fashion-MNIST's IDX files where no root is given: the folder the Debian package
#: ``dataset-fashion-mnist`` installs them in.
FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"
FASHION_MNIST_PACKAGE = "dataset-fashion-mnist"
LR = 1e-3  # Adam
EPOCHS = 100  # full batch
LOSS_THRESHOLD = 1e-4  # stop when the training loss is below this
PATIENCE = 10  # epochs of the moving mean watched by the plateau rule
REL_TOL = 1e-3  # ... which stops when it changes by less than this, relatively
#: The separation measure read wherever one is needed (figures, comparison, fits):
#: the paper's log(Tr Σ_w / Tr Σ_b), Eq. 3.
MEASURE = "trace_ratio"
#: The measures a sweep computes unless told otherwise; the first one is also recorded
#: during training. "regression" (SM S5) is computed only when asked for.
SWEEP_MEASURES = (MEASURE, "fuzziness", "cdnv", "ncc")
#: At most this many seeds per cell (a sanity bound, checked before the seeds are made:
#: 10⁵ seeds of the paper's network are ~80 core-hours per cell on a CPU).
MAX_SEEDS = 100_000
MODELS_PER_CHUNK = 16  # the automatic chunk size is at most this ...
MIN_CHUNKS = 8  # ... and gives at least this many chunks: both cores busy, a tick within ~10 s
# On a GPU one chunk is one stack (the whole device): hundreds of models keep it busy, and
# a paper diagram is still a few resumable chunks (Fig. 1c: 960 models, 3 chunks).
MODELS_PER_CHUNK_CUDA = 320
#: The command line's: one single-threaded worker per core, or this process where the
#: work would not pay for the pool's start-up (dnnphase.sweeps.cost).
SCHEDULER = "auto"
# From Python the default is this process: a process pool started from a script needs an
# ``if __name__ == "__main__":`` guard, and a missing one ends in a crash, not a slow run.
PYTHON_SCHEDULER = "serial"
#: dnnphase tune: the search's defaults (the command line shows them).
TUNE_SEEDS = 4  # models per value: the seed-mean curvature and its standard error
TUNE_VALUES_PER_ROUND = 3  # values trained together per round (one stacked sweep)
TUNE_ROUNDS = 4  # at most this many rounds
TUNE_TOLERANCE = 0.02  # stop when the bracket is this fraction of the range (on the knob's axis)
TUNE_WITHIN_SE = 2.0  # ... or when both its ends are within this many standard errors of 0
