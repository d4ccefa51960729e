"""Reading frames ahead and writing a run's outputs behind, each in a thread of its own.

``emts track`` on a file spends as long decoding its frames and encoding the annotated video
as tracking them (1280x720: ~2.3 ms to decode and ~4 ms to encode a frame here, beside ~6-8 ms
of Stages A-E). OpenCV lets go of Python's lock while it decodes and encodes, so both can
overlap the tracking: :class:`ReadAhead` decodes the next frames (and ``emts track`` runs
their Stages A-B there: :meth:`emts.pipeline.Pipeline.front_ahead`) while a frame is tracked,
:class:`InOrder` annotates and writes a tracked frame while the next ones are tracked. The
results are the same frames, lines and boxes, in the same order, as one thread's.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

# how many items wait between the threads (frames: at 1920x1080, 6 MB each)
DEPTH = 4
_POLL_S = 0.1  # how often a blocked thread looks whether it was stopped

_END = object()


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


class ReadAhead(Iterator[Any]):
    """Iterate ``items`` (a frame source) with up to ``depth`` of them read ahead by a
    background thread. Yields what ``items`` yields, in order; an error raised while reading
    is raised here where it happened, after the items before it. :meth:`close` (idempotent;
    called when the items run out) stops the thread and waits for it, so that the source can
    be released: call it before closing the source."""

    def __init__(self, items: Iterable[Any], depth: int = DEPTH) -> None:
        self._items = items
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max(int(depth), 1))
        self._stop = threading.Event()
        self._done = False
        self._thread = threading.Thread(target=self._read, name="emts-read-ahead", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for item in self._items:
                if not self._put(item):
                    return
            self._put(_END)
        except BaseException as error:  # said where the consumer reaches it
            self._put(_Failure(error))

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self) -> ReadAhead:
        return self

    def backlog(self) -> int:
        """How many items wait, read, for the consumer (approximately: the thread may be
        putting one). Asked by the reading side right after it put one, more than 1 says the
        consumer is the slower of the two (the item just put is still there either way)."""
        return self._queue.qsize()

    def __next__(self) -> Any:
        if self._done:
            raise StopIteration
        item = self._queue.get()
        if item is _END:
            self.close()
            raise StopIteration
        if isinstance(item, _Failure):
            self.close()
            raise item.error
        return item

    def close(self) -> None:
        """Stop reading ahead and wait for the thread (it finishes the read it is in)."""
        self._done = True
        self._stop.set()
        while True:  # (a thread blocked on a full queue sees the stop within _POLL_S anyway)
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        if self._thread is not threading.current_thread():
            self._thread.join()


class InOrder:
    """Run callables in a background thread, one after another in the order given (e.g. one
    frame's outputs: its annotated video frame, then its JSON line).

    The first one to raise stops the rest -- none after it runs, so files written by each
    callable in turn keep the same frames -- and its error is raised by the next :meth:`put`
    and by :meth:`close`. Signals reach only the main thread, so a callable is never cut in
    half by Ctrl-C; :meth:`close` runs what was put before it.
    """

    def __init__(self, depth: int = DEPTH) -> None:
        self._queue: queue.Queue[Callable[[], object] | object] = queue.Queue(
            maxsize=max(int(depth), 1)
        )
        self.error: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="emts-outputs", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            work = self._queue.get()
            if work is _END:
                return
            if self.error is not None:
                continue  # (stopped: what was put after a failure is dropped)
            try:
                work()  # type: ignore[operator]
            except BaseException as error:
                self.error = error

    def put(self, work: Callable[[], object]) -> None:
        """Queue ``work`` (waits while ``depth`` are queued); raises the error that stopped
        the thread, if one did."""
        if self.error is not None:
            raise self.error
        if self._closed:
            raise RuntimeError("InOrder is closed")
        self._queue.put(work)

    def close(self) -> BaseException | None:
        """Run what is queued, stop the thread and wait for it (idempotent); the error that
        stopped it, if one did."""
        if not self._closed:
            self._closed = True
            self._queue.put(_END)
            self._thread.join()
        return self.error
