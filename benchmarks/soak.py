"""Soak: run the full pipeline over a long synthetic stream and watch memory.

A gusty clip over a real still is looped with bad frames mixed in (blank, saturated, a
different size, a wrong dtype every few thousand frames); resident memory is sampled every
1,000 frames. Memory is flat when the last samples are within a few MB of the early ones.

Usage: python benchmarks/soak.py [--frames 100000] [--json benchmarks/out/soak.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import cv2
import numpy as np
from tqdm import tqdm

from emts.errors import BadInputError
from emts.pipeline import Pipeline
from emts.synth.still_clip import gusty_clip


def rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--json", default="benchmarks/out/soak.json")
    args = parser.parse_args(argv)
    clip = gusty_clip(300, seed=5)
    loop = clip.frames + clip.frames[::-1]  # forwards and backwards: no jump at the seam
    pipeline = Pipeline.default(auto_lock=True)
    samples, skipped, modes = [], 0, {"search": 0, "locked": 0, "reacquire": 0}
    start = time.perf_counter()
    for index in tqdm(range(args.frames), desc="soak", unit="frame", mininterval=2):
        frame = loop[index % len(loop)]
        if index % 5000 == 1000:
            frame = np.zeros_like(frame)
        elif index % 5000 == 2000:
            frame = np.full_like(frame, 255)
        elif index % 5000 == 3000:
            frame = cv2.resize(frame, (800, 600))
        elif index % 5000 == 4000:
            frame = frame.astype(np.float32)
        try:
            result = pipeline.step(frame)
            modes[result.mode] += 1
        except BadInputError:
            skipped += 1
        if index % 1000 == 0:
            samples.append((index, round(rss_mb(), 1)))
    seconds = time.perf_counter() - start
    early = np.median([m for _, m in samples[2:6]]) if len(samples) > 6 else samples[0][1]
    late = np.median([m for _, m in samples[-4:]])
    report = {
        "frames": args.frames,
        "seconds": round(seconds, 1),
        "frames_per_second": round(args.frames / seconds, 1),
        "bad_frames_skipped": skipped,
        "modes": modes,
        "rss_mb_early": float(early),
        "rss_mb_late": float(late),
        "rss_growth_mb": round(float(late - early), 1),
        "samples": samples,
    }
    print(json.dumps({k: v for k, v in report.items() if k != "samples"}, indent=1))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
