"""Noise schedules: knobs that change during training (the supplement's Fig. S2).

A schedule is data in the training settings
(:attr:`dnnphase.training.train.TrainingSettings.schedule`, so a sweep's
:class:`~dnnphase.sweeps.sweep.SweepConfig` has it too): a tuple of entries
``(epoch, knob, value)``, each meaning "from epoch ``epoch`` on, ``knob`` is
``value``", for every model of the call. Epochs are counted from 1, as the training
loop counts them: an entry takes effect at the start of its epoch, before that epoch's
first step.

knob : one of :data:`SCHEDULED` ("dropout", "lr").
value : a number in the knob's range (:func:`dnnphase.knobs.check`), or ``None``:
    each model's *own* value, its per-model knob — the sweep's value of that model when
    the knob is the swept one, else the configuration's fixed ``dropout`` / ``lr``
    (:func:`~dnnphase.training.train.train_ensemble`: its ``dropout`` / ``lr`` argument).

Before a knob's first entry every model has its own value, so a knob without entries
keeps it for the whole run and a schedule can only *change* a knob, not reinterpret the
sweep. Entries are listed in time order (epochs non-decreasing), at most one per
(epoch, knob), every epoch in 1..``epochs``, and each changes its knob (an entry that
keeps the value in force, e.g. ``lr@5`` when lr has not changed, is refused).

Example, the paper's Fig. S2 — train without dropout to near convergence, then introduce
dropout p for every p of a dropout sweep::

    SweepConfig(knob="dropout", values=(0.1, 0.2, 0.3), epochs=100,
                schedule=((1, "dropout", 0.0), (51, "dropout", None)))

trains every model without dropout in epochs 1..50 and with its own p from epoch 51
on; on the command line ``dnnphase sweep --knob dropout --values 0.1,0.2,0.3 --epochs
100 --schedule dropout@1=0,dropout@51``. A learning-rate drop to a tenth at epoch 31
for lr = 1e-3: ``((31, "lr", 1e-4),)``, ``--schedule lr@31=1e-4``.

Learning-rate drops relative to the run's length (``lr_drops`` of the training settings,
He & Su's "annealed by a factor of 10 at 1/3 and 2/3 of the 600 epochs"): fractions f of
the run, increasing in (0, 1); at the start of epoch ⌊f·epochs + ½⌋ + 1 every model's
current learning rate is divided by :data:`LR_DROP_DIVISOR` (10), whatever its own value
(a swept lr keeps its ratios). A schedule that sets lr cannot be combined with them
(:func:`check_lr_drops`); the stopping rules wait for the last drop as for the last
scheduled epoch (:func:`rules_start`).

Early stopping: the stopping rules (loss threshold and plateau,
:class:`~dnnphase.training.train.TrainConfig`) are suspended until the schedule's last epoch E
(:func:`last_epoch`); from E on they look only at the epoch losses since E, so the
plateau rule's windows start at E and it can stop a model at the end of epoch
E − 1 + 2·patience at the earliest. Every model therefore trains at least into epoch E:
none is retired before its schedule has run (a model that converged before dropout is
introduced still receives it). Divergence (NaN, inf, exploded) stops a model at any
epoch. Without a schedule E = 1 and the rules are exactly the unscheduled ones; a
schedule whose entries all lie at epoch 1 just sets the knobs for the whole run.

Randomness: a model's dropout masks are drawn from its own step keys at fixed offsets
(:mod:`dnnphase.networks.randomness`) whatever its p, so switching dropout on or off changes no
other random number (data order, label and data noise), and a model's result does not
depend on its stack-mates. The optimizer's state (Adam's moments, its step count) carries
on through every change. A result's ``model`` holds the dropout in effect at its end.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from dnnphase import knobs
from phasecore.checks import ConfigError, is_finite, is_int, require

__all__ = ["LR_DROP_DIVISOR", "SCHEDULED", "changes", "check_changes", "check_lr_drops",
           "check_schedule", "check_sweep_schedule", "drop_epochs", "last_epoch", "normalise",
           "normalise_drops", "own_value_used", "parse_fractions", "parse_schedule",
           "rules_start"]

#: The knobs a schedule may change (each a key of :data:`dnnphase.knobs.KNOBS`, whose
#: range its values are checked against): extend here, and in the training loop.
SCHEDULED = ("dropout", "lr")

#: What a schedule entry's value None means, as messages and help texts say it.
OWN = "each model's own value"

_FORM = "(epoch, knob, value) entries"


def normalise(schedule):
    """The schedule as a tuple of ``(int, str, float | None)`` tuples, e.g. from the lists
    of a stored JSON configuration, so that equal schedules compare and hash equal
    (``0`` and ``0.0``, numpy and Python numbers). Malformed parts are left as they are
    for :func:`check_schedule` to name."""
    if not isinstance(schedule, Sequence) or isinstance(schedule, str):
        return schedule
    out = []
    for entry in schedule:
        if isinstance(entry, Sequence) and not isinstance(entry, str) and len(entry) == 3:
            epoch, knob, value = entry
            epoch = int(epoch) if is_int(epoch) else epoch
            value = float(value) if is_finite(value) else value
            entry = (epoch, knob, value)
        out.append(entry)
    return tuple(out)


def check_schedule(schedule, epochs: int) -> None:
    """ConfigError naming ``schedule`` unless it is a valid schedule of a run of
    ``epochs`` epochs (see the module's docstring): knob names in :data:`SCHEDULED`,
    values checked by :func:`dnnphase.knobs.check` (or None), epochs integers in
    1..``epochs``, in time order, at most one entry per (epoch, knob)."""
    require(isinstance(schedule, tuple), "schedule", f"a sequence of {_FORM}", schedule)
    for entry in schedule:
        require(isinstance(entry, tuple) and len(entry) == 3, "schedule", _FORM, entry)
        epoch, knob, value = entry
        require(isinstance(knob, str) and knob in SCHEDULED, "schedule",
                f"{_FORM} with knob one of {', '.join(SCHEDULED)}", entry)
        require(is_int(epoch) and 1 <= epoch <= epochs, "schedule",
                f"{_FORM} with epoch an integer in 1..epochs ({epochs})", entry)
        label = f"schedule's {knob} at epoch {epoch}"
        # One number (knobs.check would also take a sequence of them), or None.
        require(value is None or is_finite(value), label,
                f"{knobs.RANGES[knob].words()}, or unset ({OWN})", value)
        knobs.check(knob, value, label=label, unset=OWN)
    keys = [(epoch, knob) for epoch, knob, _ in schedule]
    require(all(a[0] <= b[0] for a, b in zip(keys, keys[1:], strict=False)), "schedule",
            f"{_FORM} in time order (epochs non-decreasing)", schedule)
    require(len(set(keys)) == len(keys), "schedule",
            f"{_FORM} with at most one entry per (epoch, knob)", schedule)
    check_changes(schedule)


def check_changes(schedule: tuple, own: dict | None = None) -> None:
    """ConfigError naming the first entry of ``schedule`` that keeps the value in force: it
    would change nothing but when the stopping rules start, and is refused as an option
    that would change nothing is. ``own``: knob -> every model's own value, where all share
    one (a sweep's fixed lr, a single swept value); None or absent: unknown or per model."""
    own = own or {}
    in_force = {}  # knob -> its value since its last entry (None: each model's own)
    for epoch, knob, value in schedule:
        before = in_force.get(knob)
        now, then = (own.get(knob) if v is None else v for v in (value, before))
        unchanged = value == before or (now is not None and now == then)
        shown = OWN if before is None else repr(before)
        if before is None and own.get(knob) is not None:
            shown += f", {own[knob]!r}"
        require(not unchanged, f"schedule's {knob} at epoch {epoch}", f"a change of the "
                f"value in force ({shown}); an entry that changes nothing is refused",
                OWN if value is None else value)
        in_force[knob] = value


def check_sweep_schedule(schedule: tuple, knob: str, values: tuple, fixed: dict) -> None:
    """ConfigError naming ``schedule`` unless, in a sweep of ``knob`` over ``values`` whose
    other knobs are ``fixed`` (knob -> value), it leaves the swept values in effect at some
    epoch (:func:`own_value_used`) and each entry changes its knob (:func:`check_changes`,
    knowing every model's own value where they share one)."""
    require(own_value_used(schedule, knob), "schedule",
            f"entries that leave the swept {knob}'s values in effect at some epoch (no "
            f"{knob} entry at epoch 1, or one whose value is None: each model's own)",
            schedule)
    shared = values[0] if len(set(values)) == 1 else None  # one swept value: every model's
    check_changes(schedule, {**fixed, knob: shared})


def changes(schedule: tuple, epoch: int) -> list[tuple[str, float | None]]:
    """``(knob, value)`` of the entries that take effect at the start of ``epoch``."""
    return [(knob, value) for e, knob, value in schedule if e == epoch]


def last_epoch(schedule: tuple) -> int:
    """The epoch of the last entry (1 without entries): the stopping rules start there."""
    return max((e for e, _, _ in schedule), default=1)


def own_value_used(schedule: tuple, knob: str) -> bool:
    """Whether the models' own value of ``knob`` is in effect at some epoch: the knob has
    no entry at epoch 1, or an entry whose value is None."""
    entries = [(e, v) for e, k, v in schedule if k == knob]
    return not entries or entries[0][0] > 1 or any(v is None for _, v in entries)


def parse_schedule(text: str, name: str = "schedule") -> tuple:
    """The command line's form: comma-separated ``KNOB@EPOCH=VALUE`` entries; ``KNOB@EPOCH``
    (or ``=own``) sets each model's own value. ``"dropout@1=0,dropout@51"`` →
    ``((1, "dropout", 0.0), (51, "dropout", None))``. The entries' values are checked by
    :func:`check_schedule` (with the run's epochs); a malformed entry is a ConfigError
    naming ``name``."""
    parts = [part.strip() for part in str(text).split(",")]
    if not any(parts):
        raise ConfigError(f"{name} must list one or more KNOB@EPOCH=VALUE entries "
                          f"(got {text!r})")
    entries = []
    for part in parts:
        knob, at, rest = part.partition("@")
        epoch_text, eq, value_text = rest.partition("=")
        try:
            if not at or not knob.strip():
                raise ValueError
            epoch = int(epoch_text)
            value = None if not eq or value_text.strip() == "own" else float(value_text)
        except ValueError:
            raise ConfigError(
                f"{name} must be comma-separated KNOB@EPOCH=VALUE entries (KNOB@EPOCH or "
                f"=own: {OWN}), e.g. dropout@1=0,dropout@51 (got {part!r} in {text!r})"
            ) from None
        entries.append((epoch, knob.strip(), value))
    return tuple(entries)


# --------------------------------------------------------------------------
# Learning-rate drops relative to the run's length (He & Su; Galanti et al.)
# --------------------------------------------------------------------------

#: Each drop of ``lr_drops`` divides every model's learning rate by this (He & Su: "the
#: initial learning rate is annealed by a factor of 10 at 1/3 and 2/3 of the 600 epochs").
LR_DROP_DIVISOR = 10

_DROPS = "fractions of the run in (0, 1), increasing (e.g. 1/3,2/3)"


def normalise_drops(lr_drops):
    """``lr_drops`` as a tuple of floats (a JSON list, numpy numbers); malformed values are
    left for :func:`check_lr_drops` to name."""
    if isinstance(lr_drops, Sequence) and not isinstance(lr_drops, str):
        return tuple(float(f) if is_finite(f) else f for f in lr_drops)
    return lr_drops


def drop_epochs(lr_drops: tuple, epochs: int) -> tuple[int, ...]:
    """The epoch (counted from 1) at whose start each drop takes effect: after
    ⌊f·epochs + ½⌋ epochs at the previous rate (f = 1/3 of 600 epochs: epoch 201)."""
    return tuple(math.floor(f * epochs + 0.5) + 1 for f in lr_drops)


def check_lr_drops(lr_drops, epochs: int, schedule: tuple = ()) -> None:
    """ConfigError naming ``lr_drops`` unless it is a tuple of fractions in (0, 1),
    strictly increasing, that fall on distinct epochs 2..``epochs`` (so each drop happens
    within the run, after at least one epoch), and the ``schedule`` sets no lr."""
    require(isinstance(lr_drops, tuple) and all(is_finite(f) and 0 < f < 1 for f in lr_drops)
            and all(a < b for a, b in zip(lr_drops, lr_drops[1:], strict=False)), "lr_drops",
            _DROPS, lr_drops)
    at = drop_epochs(lr_drops, epochs)
    require(all(2 <= e <= epochs for e in at) and len(set(at)) == len(at), "lr_drops",
            f"{_DROPS} that fall on distinct epochs 2..epochs ({epochs}): each drop after "
            "round(fraction x epochs) epochs", lr_drops)
    require(not lr_drops or all(knob != "lr" for _, knob, _ in schedule), "lr_drops",
            "empty when the schedule sets lr (one rule for the learning rate over time)",
            lr_drops)


def rules_start(schedule: tuple, lr_drops: tuple, epochs: int) -> int:
    """The epoch from which the stopping rules apply: the schedule's last epoch or the last
    learning-rate drop, whichever is later (1 without either)."""
    return max((last_epoch(schedule), *drop_epochs(lr_drops, epochs)))


def parse_fractions(text: str, name: str = "lr_drops") -> tuple:
    """The command line's fractions: comma-separated numbers or ratios, ``"1/3,2/3"`` →
    ``(0.333…, 0.666…)``; a malformed entry is a ConfigError naming ``name``."""
    out = []
    for part in (p.strip() for p in str(text).split(",")):
        top, slash, bottom = part.partition("/")
        try:
            out.append(float(top) / float(bottom) if slash else float(top))
        except (ValueError, ZeroDivisionError):
            raise ConfigError(f"{name} must be {_DROPS}, numbers or ratios such as 1/3 "
                              f"(got {part!r} in {text!r})") from None
    return tuple(out)
