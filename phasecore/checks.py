"""Configuration checks: one error type and one way to raise it.

Every bad input in either package is a :class:`ConfigError` whose message
names the parameter, the allowed range and the value given, so the command
lines can print it as one line (exit code 2) before any work starts.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
import sys
from collections import Counter

import numpy as np

__all__ = ["MAX_RESULT_BYTES", "ConfigError", "SEED_LIMIT", "as_config", "check_bools",
           "check_distinct", "check_grid", "check_int", "check_memory", "check_pool_can_start",
           "check_result_size", "check_run_time", "host_available_memory", "is_finite", "is_int",
           "is_real", "parse_axis", "parse_values", "plain_fields", "require", "seed_list"]


class ConfigError(ValueError):
    """A parameter is outside its allowed range (the CLI exits with code 2)."""


def require(ok: bool, name: str, allowed: str, value) -> None:
    """Raise ``ConfigError("<name> must be <allowed> (got <value>)")`` unless ``ok``."""
    if not ok:
        # a huge integer (steps=1e300 read as an int) is shown as its magnitude, not 301 digits
        # (seeds, up to 2**64, stay exact)
        shown = f"{value:.3g}" if isinstance(value, int) and abs(value) >= 10**40 else repr(value)
        raise ConfigError(f"{name} must be {allowed} (got {shown})")


def is_finite(value) -> bool:
    """A real number that is neither NaN nor infinite (strings and None are not)."""
    if isinstance(value, (bool, str)) or value is None:
        return False
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def is_real(value) -> bool:
    """A finite real number: a Python or numpy int or float (booleans, text and None are not)."""
    return (isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
            and math.isfinite(value))


def is_int(value) -> bool:
    """A Python or numpy integer (booleans excluded)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_bools(**flags) -> None:
    """Each keyword a bool (or numpy bool): a yes/no option given "no", 0 or None would be
    read by its truth ("no" is true), so anything else is refused naming it."""
    for name, value in flags.items():
        require(isinstance(value, (bool, np.bool_)), name, "True or False", value)


def check_int(name: str, value, *, minimum: int = 0) -> int:
    """``value`` as an int, or a ConfigError naming ``name`` and the minimum."""
    require(is_int(value) and value >= minimum, name, f"an integer >= {minimum}", value)
    return int(value)


def as_config(config, cls, params: dict):
    """The configuration an entry point runs: ``cls(**params)`` without ``config``, else
    ``config`` (a ``cls``) with ``params`` replaced. Anything else where the configuration
    goes (a dict, a path) is refused naming ``config``, not failed on deep inside."""
    if dataclasses.is_dataclass(cls):  # a misspelt keyword: named with the choices
        fields = {f.name for f in dataclasses.fields(cls) if f.init}
        unknown = sorted(set(params) - fields)
        require(not unknown, "keyword", f"a field of {cls.__name__} ({', '.join(sorted(fields))})",
                ", ".join(unknown))
    if config is None:
        return cls(**params)
    require(isinstance(config, cls), "config",
            f"a {cls.__name__}, or None with its fields as keywords (a dict d: **d)",
            type(config).__name__)
    return config.replace(**params) if params else config


def plain_fields(config) -> None:
    """A frozen dataclass's numpy scalars as Python numbers, in place (for ``__post_init__``):
    ``np.int8(100)`` blocks would overflow the first product it meets (a memory estimate),
    and a configuration is stored as JSON."""
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if isinstance(value, np.generic):
            object.__setattr__(config, f.name, value.item())


def check_distinct(name: str, values) -> None:
    """ConfigError naming the repeated entries of ``values`` (a repeat would be computed twice)."""
    repeated = [v for v, n in Counter(values).items() if n > 1]
    if repeated:
        raise ConfigError(f"{name} must be distinct (got {', '.join(map(repr, repeated))} more "
                          f"than once in {list(values)!r})")


def check_grid(name: str, values) -> list:
    """Grid values given from Python: one number or a flat, non-empty sequence of finite real
    numbers, returned as a list of Python numbers (ints if all are, else floats). Text is
    refused rather than guessed at: "0.1,0.2" or "0:0.3:4" is command-line syntax, read by
    :func:`parse_values`."""
    if isinstance(values, (str, bytes)):
        raise ConfigError(f"{name} must be a list of numbers, e.g. [0.1, 0.2] (got the text "
                          f"{values!r}; text like '0.1,0.2' or '0:0.3:4' is read by "
                          "phasecore.checks.parse_values)")
    try:
        listed = np.atleast_1d(np.asarray(values, dtype=object))
    except (TypeError, ValueError):  # e.g. an object numpy cannot hold
        listed = None
    ok = listed is not None and listed.ndim == 1 and listed.size > 0 and all(
        is_real(v) for v in listed.tolist())
    require(ok, name, "one or more finite numbers (a number or a flat list of them)", values)
    # Plain Python numbers of one type (ints only if all are), as numpy promotes them: a
    # configuration is stored (JSON) and hashed to resume it, so [0, 0.5] stays [0.0, 0.5].
    return np.asarray(listed.tolist()).tolist()


#: Seeds are labelled in int64 coordinates: every seed is below this.
SEED_LIMIT = 2**63


def seed_list(seeds, name: str = "seeds", at_most: int | None = None) -> tuple[int, ...]:
    """Seeds as both packages take them: a count n >= 1 (seeds 0..n-1) or a non-empty list
    of distinct integers in [0, 2⁶³) (as the command lines' ``--seeds N``; a result labels
    them in an int64 coordinate, where a larger one would lose its identity). ``at_most``:
    the most seeds allowed, checked before a count's seeds are made."""
    allowed = "a count >= 1 or a non-empty list of distinct integers in [0, 2**63)"
    if is_int(seeds):
        require(seeds >= 1, name, allowed, seeds)
        require(seeds <= (SEED_LIMIT if at_most is None else at_most), name,
                f"at most {at_most} seeds" if at_most is not None else allowed, seeds)
        return tuple(range(int(seeds)))
    require(not isinstance(seeds, (str, bytes)), name, allowed, seeds)
    try:
        listed = np.atleast_1d(np.asarray(seeds, dtype=object)).tolist()
    except (TypeError, ValueError):
        listed = None
    require(listed is not None and np.ndim(listed) == 1 and len(listed) > 0
            and all(is_int(s) and 0 <= s < SEED_LIMIT for s in listed), name, allowed, seeds)
    require(at_most is None or len(listed) <= at_most, name, f"at most {at_most} seeds",
            len(listed))
    check_distinct(name, listed)
    return tuple(int(s) for s in listed)


def check_pool_can_start(scheduler: str) -> None:
    """A process pool must be able to start its workers (checked before any work).

    Pool workers are spawned: each re-imports the main module from its file. A script
    read from stdin (``python - < script.py``, ``__file__ == "<stdin>"``) has no file to
    re-import, and every worker would die at start (BrokenProcessPool). An interactive
    session or ``python -c`` has no ``__file__`` at all and is fine.
    """
    if scheduler != "processes":
        return
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if main_file is not None and not os.path.exists(main_file):
        raise ConfigError(
            f"scheduler 'processes' cannot start its workers from a script without a file "
            f"(the main module is {main_file!r}; spawned workers re-import it): save the "
            "script to a file and run that, or use scheduler='serial'")


def host_available_memory() -> float | None:
    """Bytes of memory this machine can still give a process (Linux MemAvailable, else the
    free physical pages), or None where neither can be read."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024  # given in KiB
    except OSError:
        pass
    try:
        return float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def check_memory(name: str, needed: float, available: float | None, what: str,
                 hint: str) -> None:
    """Refuse, before any work, a job needing ``needed`` bytes where ``available`` bytes
    remain: one line naming the parameter ``name``, ``what`` needs it and ``hint`` (how to
    need less). ``available`` None (unknown) lets it run."""
    if available is not None and needed > available:
        raise ConfigError(f"{name} is too large for this machine: {what} would need about "
                          f"{_gib(needed)} of memory, more than the {_gib(available)} "
                          f"available ({hint})")


def _gib(n_bytes: float) -> str:
    """Bytes in words: '3.2 GiB', '1.5e+06 GiB'."""
    return f"{n_bytes / 2**30:.3g} GiB"


#: The largest result a sweep or simulation may build in memory (its arrays of float64).
MAX_RESULT_BYTES = 4 * 2**30


def check_result_size(what: str, n_values: float, limit: float = MAX_RESULT_BYTES,
                      hint: str = "fewer seeds, a coarser record_every, or a smaller grid"
                      ) -> None:
    """Refuse, before any work, a result of ``n_values`` float64 numbers above ``limit`` bytes."""
    n_bytes = 8.0 * float(n_values)
    if n_bytes > limit:
        raise ConfigError(f"{what} would make a result of {n_bytes / 2**30:.3g} GiB; at most "
                          f"{limit / 2**30:.3g} GiB are allowed in one call ({hint})")


#: The longest run either package starts (seconds): one year. A longer estimate means a
#: setting far beyond what was meant (``--steps 1e30``), and such a run would never end.
MAX_RUN_SECONDS = 365 * 86400.0


def check_run_time(name: str, seconds: float, what: str, hint: str) -> None:
    """Refuse, before any work, a run estimated at more than :data:`MAX_RUN_SECONDS`:
    one line naming the parameter ``name``, ``what`` the run is and ``hint`` (how to
    need less)."""
    if not seconds <= MAX_RUN_SECONDS:  # NaN too
        raise ConfigError(f"{name} is too large: {what} would take about "
                          f"{seconds / 86400:.3g} days, more than the "
                          f"{MAX_RUN_SECONDS / 86400:.0f} days allowed ({hint})")


def parse_values(text: str, name: str = "values") -> np.ndarray:
    """``"0:0.3:16"`` (start:stop:count, inclusive) or ``"0.1,0.2,0.5"`` -> array."""
    text = str(text).strip()
    if ":" not in text and "," in text and any(v.strip() == "" for v in text.split(",")):
        raise ConfigError(f"{name} must be a comma-separated list of numbers without empty "
                          f"entries (got {text!r}: a number left out?)")
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
