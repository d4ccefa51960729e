"""Bounded summaries of endless streams: a camera run must not grow with its length.

:class:`Reservoir` keeps a fixed-size uniform sample of a stream of numbers (exact while the
stream is shorter than the reservoir) for median and p90; :class:`DecimatedHistory` keeps at
most ``capacity`` per-frame records for the timeline, halving its resolution when full.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

RESERVOIR_SIZE = 4096  # per stage: 32 KB; quantiles exact for runs up to this many frames
HISTORY_SIZE = 2048  # timeline records kept (the PNG shows at most this many bars)


class Reservoir:
    """A uniform random sample of at most ``capacity`` values of a stream (Vitter's
    algorithm R), seeded, so a run's summary is reproducible.

    Example:
        >>> r = Reservoir(capacity=100)
        >>> for v in range(10_000):
        ...     r.add(v)
        >>> len(r), r.count
        (100, 10000)
    """

    def __init__(self, capacity: int = RESERVOIR_SIZE, seed: int = 0) -> None:
        if capacity < 1:
            raise ValueError("capacity must be positive")
        self.capacity = capacity
        self.count = 0  # values seen
        self._values = np.empty(capacity, np.float64)
        self._random = random.Random(seed)

    def add(self, value: float) -> None:
        if self.count < self.capacity:
            self._values[self.count] = value
        else:
            slot = self._random.randrange(self.count + 1)
            if slot < self.capacity:
                self._values[slot] = value
        self.count += 1

    @property
    def values(self) -> np.ndarray:
        """The sample (a view; at most ``capacity`` values)."""
        return self._values[: min(self.count, self.capacity)]

    def __len__(self) -> int:
        return min(self.count, self.capacity)

    def quantile(self, q: float) -> float:
        """The ``q`` quantile (0..1) of the sample; NaN when nothing was added."""
        if not len(self):
            return float("nan")
        return float(np.quantile(self.values, q))


class DecimatedHistory:
    """Per-frame records for a timeline, at most ``capacity`` of them.

    Every record is kept until the history is full; then every other one is dropped and from
    then on only every ``stride``-th record is taken (the stride doubles each time), so the
    kept records stay evenly spaced over the whole run.
    """

    def __init__(self, capacity: int = HISTORY_SIZE) -> None:
        if capacity < 2:
            raise ValueError("capacity must be at least 2")
        self.capacity = capacity
        self.stride = 1
        self.seen = 0
        self.records: list[Any] = []

    def add(self, record: Any) -> None:
        if self.seen % self.stride == 0:
            self.records.append(record)
            if len(self.records) > self.capacity:
                self.records = self.records[::2]
                self.stride *= 2
        self.seen += 1

    def __len__(self) -> int:
        return len(self.records)
