"""``emts track``: the product's main job -- follow one person through a video or camera."""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from emts.background import InOrder, ReadAhead
from emts.errors import BadInputError
from emts.io import (
    JsonlWriter,
    UnreadableFrame,
    VideoWriter,
    no_usable_frames,
    open_source,
    signals_held,
)
from emts.pipeline import FrameResult, Pipeline
from emts.stats import DecimatedHistory, Reservoir

log = logging.getLogger("emts")
STAGES = ("A", "B", "C", "D", "E")

# Called once per frame with the FrameResult (None for a frame that could not be processed)
# and the frame's (W, H) (None likewise): e.g. emts.apps.mavlink.MavlinkCamera.
FrameHook = Callable[[FrameResult | None, tuple[int, int] | None], None]


@dataclass(frozen=True)
class LockRequest:
    """``auto``, or an operator tap on frame ``frame``: a point (x, y) in input pixels, or a
    box (x, y, w, h) around the person (a drag, or a ground station's rectangle)."""

    auto: bool = True
    x: float = 0.0
    y: float = 0.0
    frame: int = 0
    box: tuple[float, float, float, float] | None = None

    @classmethod
    def parse(cls, text: str, name: str = "lock request") -> LockRequest:
        """``auto``, ``X,Y[@FRAME]`` or ``X,Y,W,H[@FRAME]`` (input px; FRAME default 0).

        Args:
            text: the request.
            name: what an error message calls it (the command line passes its flag).
        """
        if text.strip() == "auto":
            return cls()
        usage = (
            f"{name} {text!r}: expected 'auto', X,Y[@FRAME] or X,Y,W,H[@FRAME] "
            "(input pixels), e.g. 320,240@10"
        )
        where, at, frame_text = text.partition("@")
        try:
            numbers = [float(v) for v in where.split(",")]
            frame = int(frame_text) if at else 0  # "X,Y@" names no frame: refused
        except ValueError:
            raise BadInputError(usage) from None
        if len(numbers) not in (2, 4) or not all(math.isfinite(v) for v in numbers) or frame < 0:
            raise BadInputError(usage)
        if len(numbers) == 4:
            x, y, w, h = numbers
            if w <= 0 or h <= 0:
                raise BadInputError(f"{name} {text!r}: the box needs W, H > 0")
            return cls(False, x + w / 2, y + h / 2, frame, (x, y, w, h))
        return cls(False, numbers[0], numbers[1], frame)

    def inside(self, size: tuple[int, int]) -> bool:
        """Does the tap land on a ``size`` (W, H) image: a point on a pixel (centres 0..W-1,
        edges -0.5..W-0.5), a box's centre within the image (the rule ``emts track``,
        ``emts serve`` and MAVLink share)."""
        width, height = size
        if self.box is None:
            return -0.5 <= self.x <= width - 0.5 and -0.5 <= self.y <= height - 0.5
        return 0 <= self.x <= width and 0 <= self.y <= height

    def check_inside(self, size: tuple[int, int], index: int) -> None:
        """Refuse a tap outside a ``size`` (W, H) image (BadInputError; :meth:`inside`).
        ``index``: the frame it is checked on, for the message."""
        width, height = size
        if not self.inside(size):
            what = "box centred at" if self.box is not None else "tap at"
            raise BadInputError(
                f"the {what} ({self.x:g}, {self.y:g}) is outside frame {index}, a {width}x{height} "
                "image; give input pixels of the frame"
            )


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(float(value), digits)


def record(result: FrameResult, index: int | None = None) -> dict:
    """The JSON line of one frame (``index``: the source's frame number, if it differs).

    ``target``: ``box`` [x, y, w, h] input px, detector ``score`` (None when no detection was
    associated), verifier ``p_human`` and ``verified``, ``measured_by`` (what placed the box:
    ``detection``, ``appearance``, ``both``, ``relock``, or None while coasting). ``event``:
    ``lock`` / ``relock`` / ``lost`` / ``dropped`` / ``unlock`` on the frame where that
    happened, or ``no_target`` where an operator's tap found nothing to lock on (no lock made;
    :attr:`emts.pipeline.FrameResult.event`); ``unseen`` (in ``reacquire``): frames since the
    person was last seen; ``lock_source`` says how the lock was made (``tap:detection``,
    ``tap:blob``, ``tap:faint``, ``tap:box``, ``auto``).
    """
    target = None
    if result.target is not None:
        t = result.target
        target = {
            "box": [round(float(v), 2) for v in t.box],
            "score": _round(t.score),
            "p_human": _round(t.p_human),
            "verified": bool(t.verified),
            "measured_by": t.measured_by,
        }
    line = {
        "frame": result.index if index is None else index,
        "mode": result.mode,
        "target": target,
        "ms": {s: round(result.ms.get(s, 0.0), 3) for s in STAGES},
    }
    if result.event is not None:
        line["event"] = result.event
    if result.lock_source is not None:
        line["lock_source"] = result.lock_source
    if result.unseen is not None:
        line["unseen"] = result.unseen
    return line


@dataclass
class TrackSummary:
    """Counts and per-stage latency of a run, in bounded memory: latencies go into a
    fixed-size reservoir per stage (exact median/p90 up to 4,096 frames, a uniform sample
    beyond), so an endless camera stream does not grow the summary."""

    frames: int = 0
    locked_frames: int = 0
    reacquisitions: int = 0
    skipped: int = 0
    detector: str | None = None  # what --model auto picked (emts.modality), if it did
    incomplete: str | None = None  # the source ended before its declared length (FrameSource)
    dropped: int = 0  # a live stream's frames never processed: newer ones came first
    no_target: str | None = None  # the --lock tap found nothing to lock on: where, when
    ms: dict[str, Reservoir] = field(
        default_factory=lambda: {s: Reservoir() for s in (*STAGES, "total")}
    )

    def add(self, result: FrameResult) -> None:
        self.frames += 1
        self.locked_frames += result.mode == "locked"
        for stage, reservoir in self.ms.items():
            reservoir.add(result.ms.get(stage, 0.0))

    def latency_ms(self, q: float = 0.5) -> dict[str, float]:
        """The ``q`` quantile of each stage's ms per frame (stages with data only)."""
        return {stage: r.quantile(q) for stage, r in self.ms.items() if len(r)}

    def text(self) -> str:
        lock = self.locked_frames / max(self.frames, 1)
        lines = [
            f"{self.frames} frames, locked {lock:.1%} of them, {self.reacquisitions} reacquisitions"
            + (f", {self.skipped} bad frames skipped" if self.skipped else "")
            + (f", {self.dropped} stale live frames dropped" if self.dropped else "")
            + (f"; incomplete input: {self.incomplete}" if self.incomplete else ""),
        ]
        if self.no_target:
            lines.append(f"no lock: the tap {self.no_target} found no target there")
        if self.detector:
            lines.append(f"detector: {self.detector} (picked from the frames by --model auto)")
        lines.append("stage   median ms   p90 ms")
        for stage, reservoir in self.ms.items():
            if len(reservoir):
                median, p90 = reservoir.quantile(0.5), reservoir.quantile(0.9)
                lines.append(f"{stage:<7}{median:>10.3f}{p90:>9.3f}")
        return "\n".join(lines)


BOX_FORMATS = ("otb", "mot")


class BoxWriter:
    """The target's box on every frame in a format trackers are scored in, flushed per line.

    ``otb`` (UAV123 / OTB ``groundtruth_rect.txt``): one ``x,y,w,h`` line per frame of the
    source, ``NaN,NaN,NaN,NaN`` where the tracker does not claim the person (``search``,
    ``reacquire``, a skipped frame), so that line i+1 is frame i. ``mot`` (MOT Challenge):
    ``frame,id,x,y,w,h,conf,-1,-1,-1`` for the frames where the target is ``locked`` (frame
    numbers from 1, id 1, conf the associated detection's score, 1 where none). Boxes in the
    input's pixels, like the JSON lines.
    """

    def __init__(self, path: str, fmt: str = "otb") -> None:
        if fmt not in BOX_FORMATS:
            raise BadInputError(f"box format {fmt!r}: expected one of {', '.join(BOX_FORMATS)}")
        self.format = fmt
        self._lines = JsonlWriter(path)

    def write(self, index: int, result: FrameResult | None) -> None:
        """Frame ``index``'s line(s); ``result`` None for a skipped frame."""
        target = result.target if result is not None and result.mode == "locked" else None
        if self.format == "otb":
            box = "NaN,NaN,NaN,NaN" if target is None else ",".join(_fmt(v) for v in target.box)
            self._lines.write_line(box)
        elif target is not None:
            score = 1.0 if target.score is None else target.score
            box = ",".join(_fmt(v) for v in target.box)
            self._lines.write_line(f"{index + 1},1,{box},{score:.4f},-1,-1,-1")

    def close(self) -> None:
        self._lines.close()


def _fmt(value: float) -> str:
    return f"{float(value):.2f}"


def _with_fronts(frames, pipeline: Pipeline, backlog: Callable[[], int] | None = None):
    """``(frame, its Stages A-B)`` for each frame, A-B run here (in the reading thread, ahead
    of Stages C-E: :meth:`Pipeline.front_ahead`); ``(frame, None)`` for a placeholder, and
    for every frame after a first one the detector could not be chosen on (a uniform frame:
    :meth:`Pipeline.step` runs them in order then); ``(frame, BadInputError)`` for a frame
    A-B refused. ``backlog``: how many frames wait for Stages C-E (:meth:`ReadAhead.backlog`);
    Stage C's networks run here too while more than the one just read do -- the thread that
    runs C-E is then the slower one -- and there otherwise (None: as
    :attr:`Pipeline.network_ahead` says)."""
    ahead = True
    for index, frame in enumerate(frames):
        if not ahead or isinstance(frame, UnreadableFrame):
            yield frame, None
            continue
        # the first frame: the consumer waits for it, so the detector may be chosen here
        if index > 0 and not pipeline.can_run_ahead:
            ahead = False
            yield frame, None
            continue
        try:
            network = None if backlog is None else backlog() > 1
            front = pipeline.front_ahead(frame, first=index == 0, network=network)
        except BadInputError as error:
            yield frame, error
            continue
        yield frame, front


def reading_ahead(frames, pipeline: Pipeline, networks: bool = True) -> ReadAhead:
    """``frames`` with their Stages A-B (:func:`_with_fronts`) read ahead in a thread, Stage
    C's networks there too while frames wait for Stages C-E: the two threads kept busy alike
    (on 2 cores, person12 at 1280x720 as a stream: colour 0.91x the time a frame; gray, where
    Stages C-E are short, the networks always there cost 1.04-1.14x, this 0.96-1.06x).
    ``networks`` False: Stages A-B alone there (:attr:`Pipeline.network_ahead` decides)."""
    reader: list[ReadAhead] = []  # (set once made: the thread may start before)
    backlog = (lambda: reader[0].backlog() if reader else 0) if networks else None
    reading = ReadAhead(_with_fronts(frames, pipeline, backlog))
    reader.append(reading)
    return reading


def _no_target(lock: LockRequest, index: int) -> str:
    """Say that ``lock``'s tap found nothing up to frame ``index`` (a warning; its frame and
    the few after it that tried again); return where."""
    log.warning(
        "frame %d: no target at (%g, %g): nothing detected there and nothing stands out from "
        "the ground%s; tap on the person or give a box X,Y,W,H",
        index,
        lock.x,
        lock.y,
        f" (tapped on frame {lock.frame}, tried again up to here)" if index > lock.frame else "",
    )
    return f"at ({lock.x:g}, {lock.y:g}) on frame {lock.frame}"


def run_track(
    source,
    lock: LockRequest,
    out: str | None,
    jsonl: str | None,
    pipeline: Pipeline | None = None,
    timeline_png: str | None = None,
    fps: float | None = None,
    hook: FrameHook | None = None,
    boxes: BoxWriter | None = None,
    background: bool = True,
) -> TrackSummary:
    """Track through ``source``; stream JSON lines and the annotated video as it goes.

    Memory does not grow with the stream: the summary keeps fixed-size latency samples and
    the timeline a decimated history (at most 2,048 bars). A bad frame (wrong dtype or
    shape, an unreadable image in a folder) is written as ``{"frame": i, "skipped": ...}``
    and the run goes on; a source none of whose frames could be used is a BadInputError (its
    lines written). A video that ends before its declared length is said in a warning and in
    the summary's ``incomplete``. ``fps``: frame rate of an image folder (default 30), or a
    replacement for a video's own. An interrupted run (an exception, Ctrl-C, or SIGTERM/SIGHUP
    through the command line) still finishes the video, the JSON lines and the timeline.
    ``hook``: called after each frame (see :data:`FrameHook`); the JSON lines do not change.
    A hook with an ``idle()`` method has it called while a live source waits for a frame (a
    stream reconnecting), at least every quarter second. ``boxes``: also write the target's
    box per frame in an evaluation format (closed here). ``background``: a file's or a
    folder's frames are decoded ahead and each frame's outputs (video, JSON line, boxes)
    written behind, each in a thread of its own (:mod:`emts.background`; the same files as
    without; the time of Stages A-E in ``ms`` then shares the cores with them).
    With ``--model auto`` (:mod:`emts.modality`) the line of the frame where the detector is
    picked carries ``"detector": "default" | "thermal"``, and the summary says which.
    From a live stream (:class:`emts.live.LiveSource`) a line carries ``"dropped": N`` when N
    stale frames were dropped since the previous line, and ``"stream": "reconnected"`` on the
    first frame after the stream dropped and came back.
    """
    from emts.apps.draw import annotate, timeline

    pipeline = pipeline or Pipeline.default(auto_lock=lock.auto)
    summary = TrackSummary()
    history = DecimatedHistory()
    seen = 0
    completed = False
    tap_checked = lock.auto
    first_skip = None
    tap_sent = False  # --lock's tap given to the pipeline, its outcome not seen yet
    with open_source(source, fps=fps, placeholders=True) as frames:
        pipeline.fps = frames.fps  # Stage E's descriptors depend on the frame rate
        news = getattr(frames, "news", None)  # emts.live.LiveSource
        if hasattr(frames, "on_wait") and getattr(hook, "idle", None) is not None:
            frames.on_wait = hook.idle  # a live source's outage: MAVLink's heartbeat goes on
        writer = VideoWriter(out, fps=frames.fps) if out else None
        lines = JsonlWriter(jsonl) if jsonl else None
        # a file's frames are decoded ahead, and each frame's outputs written behind, in
        # threads of their own (emts.background): the same files, in the same order. (Not a
        # camera's or a stream's: there a frame's latency counts, and on 2 cores the encoder
        # beside the tracking made a 1920x1080 frame's Stages A-E 1.5x as slow.)
        behind = background and frames.read_ahead
        # (Stage C's networks stay in this thread where a video is encoded behind: the 2
        # cores are busy then, and running them ahead cost 1.02-1.04x the wall time)
        reading = reading_ahead(frames, pipeline, networks=writer is None) if behind else None
        outputs = InOrder() if behind else None

        def emit(work: Callable[[], object]) -> None:
            """Write one frame's outputs: behind, in order, or at once."""
            if outputs is not None:
                outputs.put(work)  # (raises a write that failed before)
                return
            with signals_held():  # an interrupt lands between frames, not between files
                work()

        def write_frame(frame, result: FrameResult, index: int, line: dict) -> None:
            if writer:  # first: a full disk stops it before the frame's line
                writer.write(annotate(frame, result, index))
            if lines:
                lines.write(line)
            if boxes:
                boxes.write(index, result)

        def write_skipped(index: int, line: dict) -> None:
            if boxes:
                boxes.write(index, None)
            if lines:
                lines.write(line)

        try:
            for index, item in enumerate(
                tqdm(
                    frames if reading is None else reading,
                    total=frames.length,
                    desc="track",
                    unit="frame",
                    disable=None,
                )
            ):
                frame, front = item if reading is not None else (item, None)
                seen = index + 1
                if not tap_checked and index >= lock.frame and getattr(frame, "ndim", 0) >= 2:
                    lock.check_inside((frame.shape[1], frame.shape[0]), index)  # the first size
                    tap_checked = True
                if not lock.auto and index == lock.frame:
                    pipeline.lock(lock.x, lock.y, box=lock.box)
                    tap_sent = True
                try:
                    if isinstance(frame, UnreadableFrame):
                        raise BadInputError(frame.reason)
                    if isinstance(front, BadInputError):  # (its Stages A-B refused it)
                        raise front
                    result = pipeline.step(frame, front)
                except BadInputError as error:  # a bad frame mid-stream: say so, skip it
                    log.warning("frame %d skipped: %s", index, error)
                    summary.skipped += 1
                    first_skip = first_skip or f"frame {index}: {error}"
                    if hook:
                        hook(None, None)
                    skipped = {"frame": index, "mode": None, "target": None, "skipped": str(error)}
                    emit(functools.partial(write_skipped, index, skipped))
                    continue
                line = record(result, index)
                # the frame that decided --lock's tap (a skipped one leaves it; "waiting": tried
                # again on the next frame)
                if tap_sent and result.tap != "waiting":
                    tap_sent = False
                    if result.tap == "no_target":
                        summary.no_target = _no_target(lock, index)
                if news:  # a live stream: what happened since the previous line
                    dropped, event = news()
                    summary.dropped += dropped
                    if dropped:
                        line["dropped"] = dropped
                    if event:
                        line["stream"] = event
                if pipeline.chosen_model != summary.detector:  # --model auto has picked
                    summary.detector = line["detector"] = pipeline.chosen_model
                history.add({"mode": line["mode"], "target": line["target"]})
                summary.add(result)
                if hook:
                    hook(result, (frame.shape[1], frame.shape[0]))
                emit(functools.partial(write_frame, frame, result, index, line))
            if tap_sent and seen:  # the source ended while the tap was tried again
                summary.no_target = _no_target(lock, index)
            if outputs is not None and outputs.close() is not None:
                raise outputs.error  # a write of the last frames failed
            completed = True
        finally:
            if reading is not None:
                reading.close()  # (before the source is released)
            if outputs is not None:
                outputs.close()  # what was computed is written, up to a write that failed
            if writer:
                writer.close()
                if writer.problem and not completed:
                    log.error("%s: %s", writer.path, writer.problem)
            if lines:
                lines.close()
            if boxes:
                boxes.close()
            summary.reacquisitions = pipeline.reacquisitions
            if timeline_png and history.records:
                title = "tracker mode per frame" + (
                    f" (every {history.stride}th frame)" if history.stride > 1 else ""
                )
                if not timeline(history.records, Path(timeline_png), title):
                    message = f"cannot write the timeline {timeline_png}"
                    if completed:
                        raise BadInputError(f"{message}; choose a writable .png path")
                    log.error(message)
        summary.incomplete = frames.incomplete
        if writer and writer.problem:
            writer.finish()  # the OSError that says what is wrong with the video
    if summary.skipped and not summary.frames:  # e.g. one unreadable or 1x1 image
        raise no_usable_frames(frames.description, summary.skipped, first_skip)
    if not lock.auto and lock.frame >= seen:
        log.warning(
            "the tap frame %d never came (the source ended after %d frames); no tap was applied",
            lock.frame,
            seen,
        )
    return summary
