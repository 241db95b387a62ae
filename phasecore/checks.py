"""Configuration checks: one error type and one way to raise it.

Every bad input in either package is a :class:`ConfigError` whose message
names the parameter, the allowed range and the value given, so the command
lines can print it as one line (exit code 2) before any work starts.
"""

from __future__ import annotations

import math

import numpy as np


class ConfigError(ValueError):
    """A parameter is outside its allowed range (the CLI exits with code 2)."""


def require(ok: bool, name: str, allowed: str, value) -> None:
    """Raise ``ConfigError("<name> must be <allowed> (got <value>)")`` unless ``ok``."""
    if not ok:
        raise ConfigError(f"{name} must be {allowed} (got {value!r})")


def is_finite(value) -> bool:
    """A real number that is neither NaN nor infinite (strings and None are not)."""
    if isinstance(value, (bool, str)) or value is None:
        return False
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def is_int(value) -> bool:
    """A Python or numpy integer (booleans excluded)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_int(name: str, value, *, minimum: int = 0) -> int:
    """``value`` as an int, or a ConfigError naming ``name`` and the minimum."""
    require(is_int(value) and value >= minimum, name, f"an integer >= {minimum}", value)
    return int(value)


#: The largest result a sweep or simulation may build in memory (its arrays of float64).
MAX_RESULT_BYTES = 4 * 2**30


def check_result_size(what: str, n_values: float, limit: float = MAX_RESULT_BYTES) -> None:
    """Refuse, before any work, a result of ``n_values`` float64 numbers above ``limit`` bytes."""
    n_bytes = 8.0 * float(n_values)
    if n_bytes > limit:
        raise ConfigError(f"{what} would make a result of {n_bytes / 2**30:.3g} GiB; at most "
                          f"{limit / 2**30:.3g} GiB are allowed in one call (fewer seeds, a "
                          "coarser record_every, or a smaller grid)")


def parse_values(text: str, name: str = "values") -> np.ndarray:
    """``"0:0.3:16"`` (start:stop:count, inclusive) or ``"0.1,0.2,0.5"`` -> array."""
    text = str(text).strip()
    try:
        if ":" in text:
            start, stop, count = text.split(":")
            n, lo, hi = int(count), float(start), float(stop)
            if n < 1 or (n == 1 and lo != hi):  # one point cannot span start..stop
                raise ValueError
            return np.linspace(lo, hi, n)
        values = np.array([float(v) for v in text.split(",") if v.strip() != ""])
    except ValueError:
        raise ConfigError(
            f"{name} must be start:stop:count (count >= 2, or 1 with start = stop) or a "
            f"comma-separated list of numbers (got {text!r})"
        ) from None
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise ConfigError(f"{name} must list one or more numbers, all finite (got {text!r})")
    return values


def parse_axis(spec: str) -> tuple[str, np.ndarray]:
    """``"mu_right=0:0.03:6"`` -> ("mu_right", array of 6 values); dashes read as underscores."""
    if "=" not in str(spec):
        raise ConfigError(f"grid spec must be NAME=start:stop:count or NAME=v1,v2,... "
                          f"(got {spec!r})")
    name, values = str(spec).split("=", 1)
    name = name.strip().replace("-", "_")
    return name, parse_values(values, name=f"grid values for {name}")
