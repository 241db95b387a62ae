"""Moved: the chain fit is :mod:`springblock.fit` (this name is kept for old imports)."""

from springblock.fit import *  # noqa: F403
from springblock.fit import __all__  # noqa: F401
