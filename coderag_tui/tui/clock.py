"""A deterministic clock for tests, snapshots and screenshots, so timings render identically."""

from __future__ import annotations

import itertools
from collections.abc import Sequence


class StepClock:
    """A `perf_counter` stand-in whose every call advances by the next step of a fixed cycle."""

    def __init__(self, steps_ms: Sequence[float] = (0.4, 1.7, 0.3, 2.6, 0.9, 4.2, 0.6, 1.1)):
        self._steps = itertools.cycle([s / 1000.0 for s in steps_ms])
        self._now = 0.0

    def __call__(self) -> float:
        self._now += next(self._steps)
        return self._now
