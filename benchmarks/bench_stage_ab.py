"""Stage A + B benchmark: latency with 1 and 2 threads, and registration accuracy.

Prints a table and writes JSON (default ``benchmarks/out/stage_ab.json``):

* latency: ``emts bench`` (median and p90 ms per stage at 640x512) for each thread count;
* accuracy: Stage A's mean grid error (px at 640x512) against the true motion, on the unit
  tests' gust pairs over a real aerial still and over three long gusty clips (several seeds),
  with the share of frames that fell back to phase correlation.

Usage: python benchmarks/bench_stage_ab.py [--json OUT] [--frames 300]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import cv2
import numpy as np

from emts.apps.bench import format_table, run_bench, set_threads
from emts.front_end import MotionFrontEnd
from emts.metrics import GUST_PAIRS, registration_error
from emts.stages.a_ego_motion import EgoMotionEstimator
from emts.synth.still_clip import gusty_clip, load_demo_still


def _similarity(angle, scale, tx, ty):
    m = cv2.getRotationMatrix2D((320.0, 256.0), np.degrees(angle), scale)
    m[:, 2] += (tx, ty)
    return m


def pair_errors() -> dict[str, float]:
    image, _ = load_demo_still()
    scene = cv2.copyMakeBorder(image, 80, 80, 80, 80, cv2.BORDER_REFLECT_101).astype(np.float32)
    base = np.vstack([_similarity(0, 1, -80, -80), [0, 0, 1]])
    errors = {}
    for name, params in GUST_PAIRS.items():
        motion = _similarity(*params)
        second_pose = (np.vstack([motion, [0, 0, 1]]) @ base)[:2]
        frames = [
            np.clip(cv2.warpAffine(scene, pose, (640, 512)), 0, 255).astype(np.uint8)
            for pose in (base[:2], second_pose)
        ]
        estimator = EgoMotionEstimator()
        estimator.update(frames[0])
        errors[name] = round(
            registration_error(estimator.update(frames[1]).matrix, motion, (640, 512)), 4
        )
    return errors


def clip_errors(seeds=(1, 2, 3), frames: int = 300) -> dict[str, float]:
    errors, fallbacks, shifts = [], 0, []
    for seed in seeds:
        clip = gusty_clip(frames, seed=seed)
        front = MotionFrontEnd()
        for index, frame in enumerate(clip.frames):
            result = front.step(frame)
            if index == 0:
                continue
            truth = clip.motions[index]
            errors.append(registration_error(result.motion_in_input(), truth, (640, 512)))
            fallbacks += result.motion.method != "lk"
            shifts.append(float(np.hypot(*truth[:, 2])))
    return {
        "frames": len(errors),
        "mean_px": round(float(np.mean(errors)), 4),
        "p95_px": round(float(np.percentile(errors, 95)), 4),
        "max_px": round(float(np.max(errors)), 4),
        "fallback_fraction": round(fallbacks / len(errors), 4),
        "camera_shift_median_px": round(float(np.median(shifts)), 2),
        "camera_shift_max_px": round(float(np.max(shifts)), 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default="benchmarks/out/stage_ab.json")
    parser.add_argument("--frames", type=int, default=300)
    args = parser.parse_args(argv)
    latency = {}
    for threads in (1, 2):
        report = run_bench(frames=args.frames, threads=threads)
        latency[threads] = report
        print(format_table(report), end="\n\n")
    set_threads(2)
    pairs = pair_errors()
    clips = clip_errors(frames=args.frames)
    print("registration error (px at 640x512) on gust pairs:", json.dumps(pairs))
    print("registration error on gusty clips:", json.dumps(clips))
    a_plus_b = {
        t: round(r["stages"]["A"]["median_ms"] + r["stages"]["B"]["median_ms"], 3)
        for t, r in latency.items()
    }
    print(f"A + B median ms: 1 thread {a_plus_b[1]}, 2 threads {a_plus_b[2]} (target <= 2.0 at 2)")
    out = {
        "latency": {str(t): r for t, r in latency.items()},
        "a_plus_b_median_ms": {str(t): v for t, v in a_plus_b.items()},
        "pair_error_px": pairs,
        "clip_error": clips,
        "opencv": cv2.__version__,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
