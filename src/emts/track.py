"""``emts track``: the product's main job -- follow one person through a video or camera."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from emts.errors import BadInputError
from emts.io import JsonlWriter, VideoWriter, open_source
from emts.pipeline import FrameResult, Pipeline

log = logging.getLogger("emts")
STAGES = ("A", "B", "C", "D", "E")


@dataclass(frozen=True)
class LockRequest:
    """``auto`` or an operator tap at input pixel (x, y) on a frame."""

    auto: bool = True
    x: float = 0.0
    y: float = 0.0
    frame: int = 0

    @classmethod
    def parse(cls, text: str) -> LockRequest:
        if text == "auto":
            return cls()
        match = re.fullmatch(r"\s*([-\d.]+)\s*,\s*([-\d.]+)\s*(?:@\s*(\d+))?\s*", text)
        if not match:
            raise BadInputError(f"--lock {text!r}: expected 'auto' or X,Y[@FRAME], e.g. 320,240@10")
        return cls(False, float(match[1]), float(match[2]), int(match[3] or 0))


def record(result: FrameResult, index: int | None = None) -> dict:
    """The JSON line of one frame (``index``: the source's frame number, if it differs)."""
    target = None
    if result.target is not None:
        t = result.target
        target = {
            "box": [round(float(v), 2) for v in t.box],
            "score": None if t.score is None else round(float(t.score), 4),
            "p_human": None if t.p_human is None else round(float(t.p_human), 4),
        }
    return {
        "frame": result.index if index is None else index,
        "mode": result.mode,
        "target": target,
        "ms": {s: round(result.ms.get(s, 0.0), 3) for s in STAGES},
    }


@dataclass
class TrackSummary:
    frames: int = 0
    locked_frames: int = 0
    reacquisitions: int = 0
    skipped: int = 0
    ms: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in (*STAGES, "total")})

    def add(self, result: FrameResult) -> None:
        self.frames += 1
        self.locked_frames += result.mode == "locked"
        for stage in self.ms:
            self.ms[stage].append(result.ms.get(stage, 0.0))

    def text(self) -> str:
        lock = self.locked_frames / max(self.frames, 1)
        lines = [
            f"{self.frames} frames, locked {lock:.1%} of them, {self.reacquisitions} reacquisitions"
            + (f", {self.skipped} bad frames skipped" if self.skipped else ""),
            "stage   median ms   p90 ms",
        ]
        for stage, values in self.ms.items():
            if values:
                lines.append(
                    f"{stage:<7}{np.median(values):>10.3f}{np.percentile(values, 90):>9.3f}"
                )
        return "\n".join(lines)


def run_track(
    source,
    lock: LockRequest,
    out: str | None,
    jsonl: str | None,
    pipeline: Pipeline | None = None,
    timeline_png: str | None = None,
) -> TrackSummary:
    """Track through ``source``; stream JSON lines and the annotated video as it goes."""
    from emts.draw import annotate, timeline

    pipeline = pipeline or Pipeline.default(auto_lock=lock.auto)
    summary = TrackSummary()
    records = []
    with open_source(source) as frames:
        writer = VideoWriter(out, fps=frames.fps) if out else None
        lines = JsonlWriter(jsonl) if jsonl else None
        try:
            for index, frame in enumerate(
                tqdm(frames, total=frames.length, desc="track", unit="frame", disable=None)
            ):
                if not lock.auto and index == lock.frame:
                    pipeline.lock(lock.x, lock.y)
                try:
                    result = pipeline.step(frame)
                except BadInputError as error:  # a bad frame mid-stream: say so, skip it
                    log.warning("frame %d skipped: %s", index, error)
                    summary.skipped += 1
                    if lines:
                        lines.write(
                            {"frame": index, "mode": None, "target": None, "skipped": str(error)}
                        )
                    continue
                line = record(result, index)
                records.append(line)
                summary.add(result)
                if lines:
                    lines.write(line)
                if writer:
                    writer.write(annotate(frame, result))
        finally:
            if writer:
                writer.close()
            if lines:
                lines.close()
            summary.reacquisitions = pipeline.reacquisitions
            if timeline_png and records:
                timeline(records, Path(timeline_png))
    return summary
