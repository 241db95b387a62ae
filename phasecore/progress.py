"""Progress of long jobs: a bar on a terminal, parseable lines otherwise."""

from __future__ import annotations

import contextlib
import math
import sys
import time

__all__ = ["Progress", "overall_progress", "progress_for", "say", "weighted"]

#: Bars on the terminal now (a line printed meanwhile goes above them, not onto their end).
_BARS: list = []
#: How a bar shows its count, by unit: whole chunks and steps as integers; stages, which
#: advance by fractions (a stage's chunks), as the percentage alone.
_BAR_FORMATS = {
    "chunk": None,  # tqdm's own
    "stage": "{l_bar}{bar}| [{elapsed}<{remaining}]",
}
_COUNTED = "{l_bar}{bar}| {n:.0f}/{total:.0f} {unit}s [{elapsed}<{remaining}]"


def say(text: str, stream=None) -> None:
    """Print a line (on stdout unless ``stream``): with a progress bar on the terminal, above
    the bar, which is drawn again below it, rather than onto the bar's end."""
    stream = stream or sys.stdout
    if _BARS:
        from tqdm import tqdm

        tqdm.write(text, file=stream)
        stream.flush()
    else:
        print(text, file=stream, flush=True)


class Progress:
    """Work done / total with an ETA: a bar on a terminal, lines otherwise.

    Non-terminal lines have a fixed, parseable form (the ETA is ``?`` until
    some work has finished in this run)::

        progress <label>: <done>/<total> <unit>s (<pct>%) elapsed <s>s eta <s|?>s

    written at the start, at the end, and in between at most once every
    :attr:`line_interval` seconds (a log, not a line per chunk).
    """

    #: Seconds between two non-terminal lines (the first and the last are always
    #: written): a sweep of 25 000 small chunks writes some hundred lines, not 25 000.
    line_interval: float = 5.0

    def __init__(self, total: float, done: float = 0, label: str = "sweep", quiet: bool = False,
                 stream=None, unit: str = "chunk", since: tuple[float, float] | None = None):
        self.total, self.done, self.label, self.quiet = total, done, label, quiet
        self.unit = unit
        self.stream = stream or sys.stderr
        # (time.monotonic(), work done then) the elapsed time and the ETA count from: a
        # progress shown only once a run proves long still measures from its start
        self.start, self.start_done = since if since is not None else (time.monotonic(), done)
        self.bar = None
        self._last_line = -float("inf")
        if not quiet and getattr(self.stream, "isatty", lambda: False)():
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=done, desc=label, unit=unit, file=self.stream,
                            bar_format=_BAR_FORMATS.get(unit, _COUNTED))
            _BARS.append(self.bar)
        else:
            self._line()

    #: What one unit of progress counts as, in units of ``total`` (:func:`weighted`).
    weight: float = 1.0

    def advance(self, n: float = 1) -> None:
        # never past the total: weights' float sums may overshoot it by a rounding error
        rest = self.total - self.done
        n = min(n * self.weight, rest)
        if n <= 0:
            return
        self.done = self.total if n == rest else self.done + n
        if self.first is None:  # (elapsed, work done in this run) at the first completion
            self.first = (time.monotonic() - self.start, self.done - self.start_done)
        if self.bar is not None:
            self.bar.update(n)
        else:
            self._line()

    def _line(self) -> None:
        now = time.monotonic()
        if self.quiet or (now - self._last_line < self.line_interval
                          and self.done < self.total):
            return
        self._last_line = now
        elapsed = now - self.start
        eta = self.eta(elapsed)
        eta = "?" if eta is None else f"{eta:.1f}"
        pct = 100.0 * self.done / self.total if self.total else 100.0
        done = f"{self.done:.2f}".rstrip("0").rstrip(".") if self.done % 1 else str(
            int(self.done))
        print(f"progress {self.label}: {done}/{self.total:g} {self.unit}s ({pct:.1f}%) "
              f"elapsed {elapsed:.1f}s eta {eta}s", file=self.stream, flush=True)

    #: Units of work running at once (a sweep's pool workers): the ETA counts the ones in
    #: flight as under way, not as waiting to start.
    workers: int = 1

    #: (elapsed seconds, work done in this run) when the first unit finished (None before).
    first: tuple[float, float] | None = None

    def eta(self, elapsed: float) -> float | None:
        """Seconds left, from the work done in this run (None before any).

        Once a wave of ``workers`` units has finished after the first one, the rate since
        that first one: it leaves out the start-up (a pool's workers importing torch, the
        data loaded), which the first unit carried alone (a line said "eta 150.7 s" for a
        sweep that ended at 12 s). Before that, ``workers`` units run at once, in waves: a
        unit takes ``c = elapsed / ceil(new / workers)`` and the run ``c * ceil(todo /
        workers)``, so the first units to finish do not count the others, already running,
        as not begun (2 chunks on 2 workers said "eta 22 s" with the second about to end).
        """
        new = self.done - self.start_done
        if new <= 0:
            return None
        w = max(1, int(self.workers))
        if self.first is not None and new - self.first[1] >= w:
            since, at = self.first
            return max(0.0, (elapsed - since) / (new - at) * (self.total - self.done))
        todo = self.total - self.start_done
        per_wave = elapsed / math.ceil(new / w - 1e-9)
        return max(0.0, per_wave * math.ceil(todo / w - 1e-9) - elapsed)

    def finish(self) -> None:
        """The job is done: the bar (or the last line) shows all of it, whatever the
        estimated stage weights' rounding left (a stale 89 % above the final report)."""
        self.weight = 1.0
        self.advance(self.total - self.done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            if self.bar in _BARS:
                _BARS.remove(self.bar)


class _StageOfOverall:
    """A sweep's progress reported as a fraction of one stage of the overall bar."""

    def __init__(self, overall: Progress, total: int, done: int):
        self.overall, self.step = overall, 1.0 / max(total, 1)
        if done:
            self.overall.advance(done * self.step)

    def advance(self, n: int = 1) -> None:
        self.overall.advance(n * self.step)

    def close(self) -> None:
        pass


_OVERALL: list[Progress] = []


@contextlib.contextmanager
def weighted(progress: Progress, weight: float):
    """Within the block, each unit that ``progress`` advances (one ``advance()``, or a
    sweep's chunks run inside it) counts as ``weight`` units: a stage's share of the
    estimated work, so that the percentage and the ETA of unequal stages are right."""
    progress.weight = weight
    try:
        yield progress
    finally:
        progress.weight = 1.0


@contextlib.contextmanager
def overall_progress(stages: int, label: str, quiet: bool = False):
    """One progress bar for a job of several stages (e.g. ``reproduce``).

    Sweeps run inside it advance the current stage chunk by chunk instead of
    drawing bars of their own; call ``.advance()`` after each other stage.
    """
    progress = Progress(stages, 0, label, quiet, unit="stage")
    _OVERALL.append(progress)
    try:
        yield progress
        progress.finish()
    finally:
        _OVERALL.pop()
        progress.close()


def progress_for(total: int, done: int, label: str, quiet: bool):
    if _OVERALL:
        return _StageOfOverall(_OVERALL[-1], total, done)
    return Progress(total, done, label, quiet)
