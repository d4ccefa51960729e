"""``emts demo``: the main job until the tracker lands.

Renders a gust-shaken hover over a real aerial still with its person walking, writes it as a
video, runs Stages A and B on that video exactly as ``emts channels`` would, and compares the
estimated ego-motion with the true camera motion.
"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np

from emts.cli import run_channels
from emts.io import JsonlWriter, VideoWriter
from emts.metrics import registration_error
from emts.synth.still_clip import gusty_clip


def run_demo(out_dir: Path, frames: int = 150, seed: int = 0) -> dict:
    """Write ``input.mp4``, ``truth.jsonl``, ``channels.mp4``, ``ego.jsonl``,
    ``channels.png`` and ``summary.json`` under ``out_dir``; return the summary."""
    out_dir.mkdir(parents=True, exist_ok=True)
    clip = gusty_clip(frames, seed=seed)
    with VideoWriter(out_dir / "input.mp4") as video, JsonlWriter(out_dir / "truth.jsonl") as truth:
        for index, (frame, motion, boxes) in enumerate(
            zip(clip.frames, clip.motions, clip.person_boxes, strict=True)
        ):
            video.write(cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR))
            truth.write(
                {
                    "frame": index,
                    "M": np.round(motion, 6).tolist(),
                    "persons": np.round(boxes, 2).tolist(),
                }
            )
    run_channels(
        str(out_dir / "input.mp4"), str(out_dir / "channels.mp4"), str(out_dir / "ego.jsonl")
    )
    records = [json.loads(line) for line in (out_dir / "ego.jsonl").read_text().splitlines()]
    errors = [
        registration_error(np.array(r["M"]), motion, (640, 512))
        for r, motion in zip(records[1:], clip.motions[1:], strict=True)
    ]
    methods = [r["method"] for r in records[1:]]
    shifts = [float(np.hypot(*m[:, 2])) for m in clip.motions[1:]]
    summary = {
        "frames": frames,
        "seed": seed,
        "camera_shift_px": {
            "median": round(float(np.median(shifts)), 2),
            "max": round(max(shifts), 2),
        },
        "registration_error_px": {
            "mean": round(float(np.mean(errors)), 4),
            "p95": round(float(np.percentile(errors, 95)), 4),
            "max": round(float(np.max(errors)), 4),
        },
        "methods": {m: methods.count(m) for m in sorted(set(methods))},
    }
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    _channel_sheet(out_dir / "channels.mp4", out_dir / "channels.png")
    shift, error = summary["camera_shift_px"], summary["registration_error_px"]
    print(
        f"demo: {frames} frames, camera shift median {shift['median']} px (max {shift['max']}); "
        f"Stage A error vs truth mean {error['mean']} px, p95 {error['p95']} px; "
        f"methods {summary['methods']}\n"
        f"wrote {out_dir}: input.mp4, channels.mp4, channels.png, ego.jsonl, truth.jsonl, "
        "summary.json"
    )
    return summary


def _channel_sheet(video: Path, out: Path, rows: int = 3) -> None:
    """A PNG of a few frames of the channel video, stacked."""
    capture = cv2.VideoCapture(str(video))
    count = int(capture.get(cv2.CAP_PROP_FRAME_COUNT))
    picks = np.linspace(count // 5, count - 1, rows).astype(int)
    images = []
    for index in picks:
        capture.set(cv2.CAP_PROP_POS_FRAMES, int(index))
        ok, image = capture.read()
        if ok:
            images.append(image)
    capture.release()
    if images:
        cv2.imwrite(str(out), np.vstack(images))
