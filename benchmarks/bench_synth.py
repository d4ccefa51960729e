"""Synthetic curriculum benchmark: what the generated data looks like to Stage A and to L/R.

Reads generated sets (default: data/tier1, data/bench, data/negatives, data/fpbench, as
``make data`` writes them) and reports:

* generation speed and disk size per set (from each manifest);
* Stage A's estimate against the true camera motion of every frame (mean grid error, px at
  640x512: median, p95; fallback share), for real and procedural plates;
* the share of persons (at least half visible, at least 12 px tall) whose luminance contrast to
  the surrounding plate is below the plate's own local standard deviation (|contrast| < 1:
  "invisible in L"), and how many of those stand out in R (mean R in the box at least twice
  the mean R of the ring around it).

Usage: python benchmarks/bench_synth.py [--sets data/tier1 data/bench ...] [--clips 150]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

from emts.front_end import MotionFrontEnd
from emts.geometry import Frame, FrameGeometry
from emts.metrics import registration_error
from emts.synth.store import ClipSet

GEOMETRY = FrameGeometry((640, 512))


def _ring_contrast(residual: np.ndarray, box: np.ndarray) -> float:
    x, y, w, h = box
    x0, y0, x1, y1 = int(x), int(y), int(np.ceil(x + w)), int(np.ceil(y + h))
    inner = residual[max(y0, 0) : y1, max(x0, 0) : x1]
    gx0, gy0 = max(int(x - w / 2), 0), max(int(y - h / 2), 0)
    outer = residual[gy0 : int(y + 1.5 * h), gx0 : int(x + 1.5 * w)]
    ring_sum = outer.sum() - inner.sum()
    ring_count = outer.size - inner.size
    if inner.size == 0 or ring_count <= 0:
        return 0.0
    return float(inner.mean() / max(ring_sum / ring_count, 1e-6))


def measure(folder: Path, clips: int) -> dict:
    clip_set = ClipSet(folder)
    manifest = clip_set.manifest
    errors = {"real": [], "procedural": []}
    fallbacks = {"real": 0, "procedural": 0}
    persons = invisible = invisible_but_in_r = 0
    picks = clip_set.indices[:clips]
    for index in tqdm(picks, desc=f"measure {folder.name}", disable=None):
        clip = clip_set.load(index)
        source = "real" if clip.labels["plate"].startswith("hituav") else "procedural"
        front = MotionFrontEnd()
        for t, frame in enumerate(clip.frames):
            result = front.step(frame)
            if t == 0:
                continue
            truth = np.array(clip.labels["frames"][t]["camera_motion"])
            errors[source].append(registration_error(result.motion_in_input(), truth, (640, 512)))
            fallbacks[source] += result.motion.method != "lk"
            for person in clip.labels["frames"][t]["persons"]:
                if person["visible"] < 0.5 or person["box"][3] < 12:
                    continue
                persons += 1
                if abs(person["contrast"]) < 1.0:
                    invisible += 1
                    box = GEOMETRY.boxes([person["box"]], Frame.INPUT, Frame.NETWORK)[0]
                    invisible_but_in_r += _ring_contrast(clip.channels[t, 1], box) >= 2.0
    report = {
        "set": manifest.get("set"),
        "clips_measured": len(picks),
        "generation": {
            k: manifest.get(k) for k in ("clips", "frames", "seconds", "frames_per_second", "bytes")
        },
    }
    for source, values in errors.items():
        if values:
            report[f"stage_a_{source}_plates"] = {
                "frames": len(values),
                "median_px": round(float(np.median(values)), 4),
                "p95_px": round(float(np.percentile(values, 95)), 4),
                "fallback_share": round(fallbacks[source] / len(values), 4),
            }
    if persons:
        report["persons"] = {
            "count": persons,
            "invisible_in_L_share": round(invisible / persons, 4),
            "of_those_standing_out_in_R": round(invisible_but_in_r / max(invisible, 1), 4),
        }
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = [f"data/{name}" for name in ("tier1", "bench", "negatives", "fpbench")]
    parser.add_argument("--sets", nargs="+", default=default)
    parser.add_argument("--clips", type=int, default=150, help="clips measured per set")
    parser.add_argument("--json", default="benchmarks/out/synth.json")
    args = parser.parse_args(argv)
    reports = [measure(Path(folder), args.clips) for folder in args.sets]
    total_bytes = sum(r["generation"]["bytes"] or 0 for r in reports)
    total_seconds = sum(r["generation"]["seconds"] or 0 for r in reports)
    total_frames = sum(r["generation"]["frames"] or 0 for r in reports)
    summary = {
        "sets": reports,
        "total": {
            "frames": total_frames,
            "seconds": round(total_seconds, 1),
            "frames_per_second": round(total_frames / max(total_seconds, 1e-9), 1),
            "gigabytes": round(total_bytes / 1e9, 3),
        },
    }
    print(json.dumps(summary, indent=1))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
