"""EMTS timed beside the trackers a user would install instead -- OpenCV's VitTrack and
NanoTrack v2, and optionally a YOLO detector -- in one run (``emts bench --peers``).

Machines differ 2-3x in speed, so only ratios measured in the same run count. Every frame of
the clip is decoded once (and made 8-bit BGR once, untimed) and the same array is given, in
turn, to one :meth:`Pipeline.step` of EMTS (Stages A-E), one ``update`` of VitTrack, one of
NanoTrack v2 (and one ``session.run`` of the YOLO model: its letterbox is made before the
clock starts, its NMS never runs). Each tracker keeps its own state over the stream: all are
locked on the same box on the lock frame, where the run starts (earlier frames are read and
dropped). Only the calls are timed; the first ``warmup`` frames (the lock frame among them) are
not. Each round starts every tracker afresh on the same frames; per tracker the report gives
the median and p90 ms a frame (medians over rounds) and the ratio tracker / EMTS (the ratio of
each round's medians, median over rounds).

Then, each round, every tracker runs the round's frames again as a stream, one tracker after
the other, timed by the wall clock from the first frame after the warm-up to the last: EMTS as
``emts track`` runs a file, its Stages A-B (and Stage C's networks while frames wait) in a
second thread ahead of the frames whose Stages C-E run (:func:`emts.apps.track.reading_ahead`),
the peers frame after frame (they have nothing to run ahead). That is the time a frame a user
gets from a clip; the per-frame figures above are the time to a frame's answer.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from tqdm import tqdm

from emts.apps.bench import build_runner, set_threads
from emts.apps.peer import _peer_session, peer_input
from emts.apps.peer_trackers import PeerTracker, peer_factories
from emts.apps.track import LockRequest, reading_ahead
from emts.errors import BadInputError
from emts.io import UnreadableFrame, open_source

EMTS = "EMTS"
CLAIM_SIZE = (1280, 720)  # what the README's figure of the peers' speed is about
SYNTHETIC_NOTE = (
    "this is the bench's synthetic 640x512 gusty clip (grey, fed as BGR); the README's figure "
    "(the peers at about half EMTS's time a frame) is about real 1280x720 video: give --clip "
    "VIDEO --lock X,Y,W,H"
)


@dataclass
class PeerClip:
    """The frames every round times, from the lock frame on.

    Attributes:
        description: what the clip is (for the report).
        size: (W, H) of the frames.
        fps: the frame rate EMTS is told.
        lock: the box ``[x, y, w, h]`` (input px) every tracker is locked on, and its frame.
        frames: a fresh iterator of 8-bit BGR frames from the lock frame on, one per call.
        length: how many it gives, if known.
        synthetic: the bench's generated clip (not a user's video).
    """

    description: str
    size: tuple[int, int]
    fps: float
    lock: LockRequest
    frames: Callable[[], Iterator[np.ndarray]]
    length: int | None = None
    synthetic: bool = False


def as_bgr(frame, index: int) -> np.ndarray:
    """``frame`` as 8-bit BGR (the peers take nothing else; EMTS is given the same array).

    Raises:
        BadInputError: an unreadable image, or a frame that is not 8-bit grey, BGR or BGRA.
    """
    if isinstance(frame, UnreadableFrame):
        raise BadInputError(f"frame {index}: {frame.reason}")
    if not isinstance(frame, np.ndarray) or frame.dtype != np.uint8:
        what = getattr(frame, "dtype", type(frame).__name__)
        raise BadInputError(
            f"frame {index} is {what}: VitTrack and NanoTrack take 8-bit frames (grey or BGR)"
        )
    if frame.ndim == 2 or (frame.ndim == 3 and frame.shape[2] == 1):
        return cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR)
    if frame.ndim == 3 and frame.shape[2] == 4:
        return cv2.cvtColor(frame, cv2.COLOR_BGRA2BGR)
    if frame.ndim == 3 and frame.shape[2] == 3:
        return np.ascontiguousarray(frame)
    raise BadInputError(f"frame {index} has shape {frame.shape}: expected grey, BGR or BGRA")


def synthetic_clip(count: int, lock: LockRequest | None = None, seed: int = 0) -> PeerClip:
    """The bench's gusty clip (:func:`emts.synth.still_clip.gusty_clip`), ``count`` frames
    from the lock frame on. Without ``lock``: locked on frame 0 on the box of the walker the
    generator knows (the one the camera follows)."""
    from emts.synth.still_clip import gusty_clip

    first = 0 if lock is None else lock.frame
    clip = gusty_clip(first + count, seed=seed)
    height, width = clip.frames[0].shape[:2]
    if lock is None:
        box = tuple(round(float(v), 1) for v in clip.person_boxes[0][0])
        lock = LockRequest(False, box[0] + box[2] / 2, box[1] + box[3] / 2, 0, box)
    lock.check_inside((width, height), lock.frame)

    def frames() -> Iterator[np.ndarray]:
        for index in range(first, len(clip.frames)):
            yield as_bgr(clip.frames[index], index)

    description = f"synthetic gusty clip (seed {seed})"
    return PeerClip(description, (width, height), 30.0, lock, frames, count, True)


def user_clip(source: str, lock: LockRequest, count: int, fps: float | None = None) -> PeerClip:
    """``count`` frames of a video, image folder or glob from ``lock``'s frame on (re-read
    every round; decoding is not timed).

    Raises:
        BadInputError: the clip cannot be read, ends before the lock frame, or the lock box's
            centre is outside the lock frame.
    """
    if lock.box is None:
        raise BadInputError("the peers need a box to lock on: give --lock X,Y,W,H[@FRAME]")
    with open_source(source, fps=fps, placeholders=True) as frames:
        description, rate, length, first = frames.description, frames.fps, frames.length, None
        for index, frame in enumerate(frames):
            if index == lock.frame:
                first = as_bgr(frame, index)
                break
        else:
            raise BadInputError(
                f"{description} ends before the lock frame {lock.frame} ({index + 1} frames)"
            )
    size = (first.shape[1], first.shape[0])
    lock.check_inside(size, lock.frame)

    def read() -> Iterator[np.ndarray]:
        with open_source(source, fps=fps, placeholders=True) as again:
            for index, frame in enumerate(again):
                if index >= lock.frame + count:
                    break
                if index >= lock.frame:
                    yield as_bgr(frame, index)

    length = None if length is None else max(0, min(count, length - lock.frame))
    return PeerClip(description, size, rate, lock, read, length)


class Contestant:
    """One of the timed: ``start()`` a fresh state each round (locked on the clip's box),
    ``prepare(frame)`` what ``step`` takes (untimed), ``step(prepared)`` the timed call (it
    returns the tracker's mode, or None for a detector)."""

    def start(self) -> None:
        pass

    def prepare(self, frame: np.ndarray):
        return frame

    def step(self, prepared) -> str | None:
        raise NotImplementedError

    streams = True  # timed as a stream too (:meth:`stream`)

    def stream(self, frames: list[np.ndarray], warmup: int) -> float:
        """Wall ms a frame over ``frames[warmup:]``, started afresh on ``frames`` and stepped
        frame after frame."""
        self.start()
        start = time.perf_counter()
        for index, frame in enumerate(frames):
            if index == warmup:
                start = time.perf_counter()
            self.step(frame)
        return (time.perf_counter() - start) * 1e3 / max(len(frames) - warmup, 1)


class _Emts(Contestant):
    """The pipeline, started afresh each round and locked on the clip's box."""

    def __init__(self, runner, clip: PeerClip) -> None:
        self.runner, self.clip = runner, clip

    def start(self) -> None:
        self.runner.reset()
        self.runner.fps = self.clip.fps
        lock = self.clip.lock
        self.runner.lock(lock.x, lock.y, box=lock.box)

    def step(self, frame: np.ndarray) -> str:
        return self.runner.step(frame).mode

    def stream(self, frames: list[np.ndarray], warmup: int) -> float:
        """Wall ms a frame over ``frames[warmup:]`` as ``emts track`` runs a file: Stages A-B
        (and Stage C's networks while frames wait) in a reading thread, up to
        :data:`emts.background.DEPTH` frames ahead of the one whose Stages C-E run here."""
        self.start()
        reader = reading_ahead(iter(frames), self.runner)
        start = time.perf_counter()
        try:
            for index, (frame, front) in enumerate(reader):
                if index == warmup:
                    start = time.perf_counter()
                if isinstance(front, BaseException):
                    raise front
                self.runner.step(frame, front=front)
        finally:
            reader.close()
        return (time.perf_counter() - start) * 1e3 / max(len(frames) - warmup, 1)


class _Peer(Contestant):
    """A cv2 tracker behind :class:`PeerTracker`, a fresh one each round."""

    def __init__(self, name: str, make: Callable[[], object], clip: PeerClip) -> None:
        self.name, self.make, self.clip = name, make, clip
        self.tracker: PeerTracker | None = None

    def start(self) -> None:
        lock = self.clip.lock
        self.tracker = PeerTracker(self.make, self.name)
        self.tracker.lock(lock.x, lock.y, box=lock.box)

    def step(self, frame: np.ndarray) -> str:
        try:
            return self.tracker.step(frame).mode
        except cv2.error as error:
            raise BadInputError(f"{self.name} failed: {_last_line(error)}") from None


class _Detector(Contestant):
    """A YOLO-style ONNX detector: ``session.run`` timed, its letterbox made before."""

    def __init__(self, path: Path, threads: int) -> None:
        self.session = _peer_session(path, threads)
        inputs = self.session.get_inputs()
        if len(inputs) != 1 or len(inputs[0].shape) != 4:
            raise BadInputError(f"{path}: expected one (1, 3, H, W) image input, got {inputs}")
        self.input = inputs[0]

    def prepare(self, frame: np.ndarray) -> dict:
        return {self.input.name: peer_input(frame, self.input.shape)}

    def step(self, feed: dict) -> None:
        self.session.run(None, feed)

    streams = False  # (a detector: the per-frame figure is its whole story)


def _last_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[-1] if text else type(error).__name__


def check_peers(factories: dict[str, Callable[[], object]], peers: Path) -> None:
    """Build each peer once: weights OpenCV cannot load are one line of bad input."""
    for name, make in factories.items():
        try:
            make()
        except cv2.error as error:
            raise BadInputError(
                f"{name}: OpenCV cannot load its weights from {peers} ({_last_line(error)})"
            ) from None


def time_trackers(
    contestants: dict[str, Contestant], clip: PeerClip, rounds: int, warmup: int
) -> list[dict]:
    """Interleaved timing: per round, name -> ms of each timed frame and the modes reported.
    For every frame each contestant (:class:`Contestant`; EMTS first) runs once, in order; the
    first ``warmup`` frames of a round are not timed. Then each one that streams runs the
    round's frames (held in memory: ~2.8 MB a 1280x720 frame) as a stream, in turn
    (``streamed``: name -> wall ms a frame)."""
    out = []
    for round_ in range(rounds):
        for contestant in contestants.values():
            contestant.start()
        ms = {name: [] for name in contestants}
        modes = {name: [] for name in contestants}
        desc = f"peers round {round_ + 1}/{rounds}"
        seen = 0
        bar = tqdm(clip.frames(), desc=desc, total=clip.length, unit="frame", disable=None)
        for index, frame in enumerate(bar):
            seen = index + 1
            for name, contestant in contestants.items():
                prepared = contestant.prepare(frame)
                start = time.perf_counter()
                mode = contestant.step(prepared)
                elapsed = (time.perf_counter() - start) * 1e3
                if index >= warmup:
                    ms[name].append(elapsed)
                    modes[name].append(mode)
        if not ms[EMTS]:
            raise BadInputError(
                f"{clip.description}: {seen} frames from the lock frame "
                f"{clip.lock.frame}, all within --warmup {warmup}: give a longer clip or a "
                "smaller --warmup"
            )
        streamed = {}
        frames = list(itertools.islice(clip.frames(), seen))
        for name, contestant in contestants.items():
            if contestant.streams:
                streamed[name] = round(contestant.stream(frames, warmup), 4)
        del frames
        out.append({"ms": ms, "modes": modes, "streamed": streamed})
    return out


def summarize(per_round: list[dict]) -> tuple[dict, list[dict]]:
    """(name -> median ms, p90 ms, ratio to EMTS, share of frames locked; the rounds' figures).

    Median and p90 are the medians over rounds of each round's; the ratio is each round's
    median / EMTS's median, median over rounds; ``locked`` is None for a detector."""
    rounds = []
    for figures in per_round:
        emts = float(np.median(figures["ms"][EMTS]))
        row = {}
        for name, values in figures["ms"].items():
            median = float(np.median(values))
            modes = figures["modes"][name]
            locked = None if modes[0] is None else sum(m == "locked" for m in modes) / len(modes)
            row[name] = {
                "median_ms": round(median, 4),
                "p90_ms": round(float(np.percentile(values, 90)), 4),
                "ratio": round(median / emts, 4),
                "locked": locked,
                "frames": len(values),
            }
        rounds.append(row)
    summary = {}
    for name in rounds[0]:
        column = [r[name] for r in rounds]
        locked = [r["locked"] for r in column]
        summary[name] = {
            "median_ms": round(float(np.median([r["median_ms"] for r in column])), 4),
            "p90_ms": round(float(np.median([r["p90_ms"] for r in column])), 4),
            "ratio_to_emts": round(float(np.median([r["ratio"] for r in column])), 4),
            "locked": None if locked[0] is None else round(float(np.median(locked)), 4),
        }
    for name, row in summary.items():  # as a stream (per round: wall ms a frame)
        streamed = [f.get("streamed", {}).get(name) for f in per_round]
        if None in streamed or EMTS not in per_round[0].get("streamed", {}):
            continue
        ratios = [v / f["streamed"][EMTS] for v, f in zip(streamed, per_round, strict=True)]
        row["stream_ms"] = round(float(np.median(streamed)), 4)
        row["stream_ratio_to_emts"] = round(float(np.median(ratios)), 4)
    for row, figures in zip(rounds, per_round, strict=True):
        for name, value in figures.get("streamed", {}).items():
            row[name]["stream_ms"] = value
    return summary, rounds


def run_peer_trackers(
    peers: str | Path,
    clip: str | None = None,
    lock: LockRequest | None = None,
    frames: int = 300,
    warmup: int = 30,
    rounds: int = 3,
    threads: int = 2,
    fps: float | None = None,
    peer_yolo: str | Path | None = None,
    seed: int = 0,
    **emts_options,
) -> dict:
    """EMTS, VitTrack, NanoTrack v2 (and ``peer_yolo``) interleaved frame by frame on ``clip``
    (a video, image folder or glob; None: the bench's synthetic clip, locked on its walker), from
    ``lock``'s frame (its box; required with ``clip``) over ``warmup`` + ``frames`` frames,
    ``rounds`` times. ``emts_options``: :func:`emts.apps.bench.build_runner`'s (``model``,
    ``precision``, ``backend``, ``detector_mode``, ``network_size``, ``warp_at``,
    ``coarse_pass``); EMTS locks only on the box. ``fps``: an image folder's frame rate (default
    30), or a replacement for a video's own (EMTS's Stages D and E use it).

    Raises:
        BadInputError: no peers folder or weight file, an OpenCV without the trackers, a clip
            that cannot be read, a lock box outside its frame, no shipped detector.
    """
    peers = Path(peers)
    factories = peer_factories(peers)
    set_threads(threads)
    check_peers(factories, peers)
    count = warmup + frames
    if clip is None:
        chosen = synthetic_clip(count, lock, seed)
    else:
        if lock is None:
            raise BadInputError(
                "--clip needs --lock X,Y,W,H[@FRAME]: the box every tracker locks on"
            )
        chosen = user_clip(clip, lock, count, fps)
    options = {"model": None, "precision": None, **emts_options}
    runner, models = build_runner(threads=threads, auto_lock=False, **options)
    if not models:
        raise BadInputError("--peers compares with the whole pipeline: no detector shipped")
    contestants = {EMTS: _Emts(runner, chosen)}
    contestants.update({name: _Peer(name, make, chosen) for name, make in factories.items()})
    if peer_yolo is not None:
        contestants[Path(peer_yolo).name] = _Detector(Path(peer_yolo), threads)
    summary, per_round = summarize(time_trackers(contestants, chosen, rounds, warmup))
    lock = chosen.lock
    report = {
        "clip": chosen.description,
        "synthetic": chosen.synthetic,
        "size": list(chosen.size),
        "fps": chosen.fps,
        "lock": {"frame": lock.frame, "box": [round(float(v), 2) for v in lock.box]},
        "frames_per_round": per_round[0][EMTS]["frames"],
        "warmup": warmup,
        "rounds": rounds,
        "threads": threads,
        "order": list(contestants),
        "detectors": [] if peer_yolo is None else [Path(peer_yolo).name],
        "opencv": cv2.__version__,
        "models": models,
        "peers": str(peers),
        "trackers": summary,
        "per_round": per_round,
    }
    report["notes"] = notes(report)
    return report


def notes(report: dict) -> list[str]:
    """What the figures are not: a synthetic clip, or a clip of another size than the README's."""
    if report["synthetic"]:
        return [SYNTHETIC_NOTE]
    width, height = report["size"]
    if (width, height) != CLAIM_SIZE:
        return [
            f"the clip is {width}x{height}; the README's figure (the peers at about half EMTS's "
            "time a frame) is about real 1280x720 video"
        ]
    return []


def format_peer_trackers(report: dict) -> str:
    """Plain-text table of a :func:`run_peer_trackers` report."""
    box = ",".join(f"{v:g}" for v in report["lock"]["box"])
    width, height = report["size"]
    rounds = f"{report['rounds']} round{'s' * (report['rounds'] > 1)}"
    lines = [
        f"{report['clip']} ({width}x{height}, {report['fps']:g} fps), "
        f"locked on {box} at frame {report['lock']['frame']}",
        f"{report['frames_per_round']} timed frames after {report['warmup']} warm-up x {rounds}, "
        f"threads {report['threads']}, OpenCV {report['opencv']}",
        f"interleaved per frame ({', '.join(report['order'])}), compute only: each frame decoded "
        "once, not timed",
        f"{'tracker':<16}{'median ms':>11}{'p90 ms':>10}{'x EMTS':>9}{'locked':>9}",
    ]
    for name, t in report["trackers"].items():
        locked = "-" if t["locked"] is None else f"{t['locked']:.0%}"
        lines.append(
            f"{name:<16}{t['median_ms']:>11.3f}{t['p90_ms']:>10.3f}"
            f"{t['ratio_to_emts']:>9.2f}{locked:>9}"
        )
    lines.append(
        f"x EMTS: tracker / EMTS median ms a frame, median of {rounds}; "
        "locked: share of timed frames the tracker called locked"
    )
    streamed = {n: t for n, t in report["trackers"].items() if "stream_ms" in t}
    if streamed:
        lines += [
            "as a stream, one tracker at a time over the same frames (wall clock; EMTS as "
            "emts track runs a file: Stages A-B, and the networks while frames wait, in a "
            "second thread)",
            f"{'tracker':<16}{'ms a frame':>11}{'x EMTS':>10}",
        ]
        for name, t in streamed.items():
            lines.append(f"{name:<16}{t['stream_ms']:>11.3f}{t['stream_ratio_to_emts']:>10.2f}")
    for name in report["detectors"]:
        lines.append(f"{name}: a detector, session.run only (its letterbox and NMS not timed)")
    lines += [f"note: {note}" for note in report["notes"]]
    return "\n".join(lines)
