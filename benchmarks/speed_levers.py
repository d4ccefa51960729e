"""The levers issue 11 names for Stage A and the measurement itself, measured: what each
would buy towards YOLOv8n / EMTS >= 30x, and what it costs.

Three parts, each on the bench's gusty 640x512 clip (``emts bench``'s), settings interleaved
frame by frame so that the machine's drift cancels:

* ``interleave``: the peer ratio as ``emts bench --peer-yolo`` measures it (one pipeline step,
  one peer run, frame by frame) against blocks of ``--block`` frames of each in turn. If the
  peer's big working set evicted our small one between frames, the per-frame protocol would
  charge EMTS for a cache state it never sees on a drone; blocks show how much.
* ``lk``: one ``cv2.calcOpticalFlowPyrLK`` call at Stage A's 320x256 as §3.2 and
  :class:`emts.config.EgoMotionConfig` run it (Shi-Tomasi corners, window 11, 3 levels, 20
  iterations), against fewer iterations, levels, a smaller window, fewer corners, and one
  corner (the pyramids and derivatives alone: what reusing the previous frame's pyramid could
  save at most). Also whether OpenCV's Python bindings take a pyramid built by
  ``cv2.buildOpticalFlowPyramid`` at all.
* ``stage-a``: Stage A's registration error against the clip's true motion (3 gusty clips,
  as ``benchmarks/bench_stage_ab.py``) and Stage A's time, for the shipped settings and the
  cheaper ones (window 9; 90 or 60 corners).

Writes OUT/speed_levers.json and OUT/speed_levers.png.

    python benchmarks/speed_levers.py --out reports/speed/levers [--peer-yolo /tmp/yolov8n.onnx]
        [--parts interleave,lk,stage-a]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import cv2
import numpy as np
from tqdm import tqdm

from emts.apps.bench import set_threads
from emts.config import EgoMotionConfig
from emts.front_end import MotionFrontEnd
from emts.metrics import registration_error
from emts.stages.a_ego_motion import EgoMotionEstimator
from emts.synth.still_clip import gusty_clip

SHIPPED = EgoMotionConfig()
LK_VARIANTS = {  # name: (iterations, levels, window, corners)
    "shipped: 20 it., 3 levels, win 11, 120 c.": (20, 3, 11, 120),
    "10 iterations": (10, 3, 11, 120),
    "5 iterations": (5, 3, 11, 120),
    "2 levels": (20, 2, 11, 120),
    "window 9": (20, 3, 9, 120),
    "window 7": (20, 3, 7, 120),
    "90 corners": (20, 3, 11, 90),
    "60 corners": (20, 3, 11, 60),
    "1 corner (pyramids only)": (20, 3, 11, 1),
}
STAGE_A_VARIANTS = {
    "shipped": {},
    "window 9": {"lk_window": 9},
    "90 corners": {"max_corners": 90},
    "60 corners": {"max_corners": 60},
    "window 9, 90 corners": {"lk_window": 9, "max_corners": 90},
}


def stage_a_frames(count: int, seed: int = 0) -> list[np.ndarray]:
    """The bench clip's frames at Stage A's 320x256, as Stage A makes them."""
    front = MotionFrontEnd()
    frames = []
    for frame in gusty_clip(count, seed=seed).frames:
        working = front.preprocess(frame)[0]
        frames.append(cv2.resize(working, (320, 256), interpolation=cv2.INTER_AREA))
    return frames


def pyramid_accepted(frame: np.ndarray) -> tuple[bool, str]:
    """Whether ``cv2.calcOpticalFlowPyrLK`` takes prebuilt pyramids from Python (it does in
    C++; reusing the previous frame's would save one pyramid and its derivatives a frame)."""
    c = SHIPPED
    window = (c.lk_window, c.lk_window)
    _, pyramid = cv2.buildOpticalFlowPyramid(frame, window, c.lk_levels, withDerivatives=True)
    corners = np.array([[[100.0, 100.0]]], np.float32)
    for form in (pyramid, list(pyramid)):
        try:
            cv2.calcOpticalFlowPyrLK(form, form, corners, None, winSize=window)
            return True, ""
        except cv2.error as error:
            message = str(error).strip().splitlines()[-1].strip(" >-")
    return False, message


def lk_costs(frames: list[np.ndarray], repeats: int = 3) -> dict:
    """Median ms of one LK call per variant (all variants on every frame pair, in turn)."""
    c = SHIPPED
    corners = [
        cv2.goodFeaturesToTrack(
            f, c.max_corners, c.corner_quality, c.corner_min_distance, blockSize=3
        )
        for f in frames
    ]
    times: dict[str, list[float]] = {name: [] for name in LK_VARIANTS}
    pairs = [(i - 1, i) for i in range(1, len(frames))] * repeats
    for a, b in tqdm(pairs, desc="lk", unit="pair", disable=None):
        for name, (iterations, levels, window, count) in LK_VARIANTS.items():
            criteria = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, iterations, c.lk_epsilon)
            start = time.perf_counter()
            cv2.calcOpticalFlowPyrLK(
                frames[a],
                frames[b],
                corners[a][:count],
                None,
                winSize=(window, window),
                maxLevel=levels,
                criteria=criteria,
            )
            times[name].append((time.perf_counter() - start) * 1e3)
    accepted, reason = pyramid_accepted(frames[0])
    return {
        "median_ms": {k: round(float(np.median(v)), 4) for k, v in times.items()},
        "calls": len(pairs),
        "prebuilt_pyramid_accepted": accepted,
        "prebuilt_pyramid_error": reason,
    }


def stage_a_costs(seeds=(1, 2, 3), frames: int = 300, timing_frames: int = 400) -> dict:
    """Registration error (px at 640x512) and Stage A's median ms per variant."""
    out = {}
    clips = [gusty_clip(frames, seed=s) for s in seeds]
    for name, change in STAGE_A_VARIANTS.items():
        config = dataclasses.replace(SHIPPED, **change)
        errors = []
        for clip in clips:
            front = MotionFrontEnd(ego_config=config)
            for index, frame in enumerate(tqdm(clip.frames, desc=name, disable=None)):
                result = front.step(frame)
                if index:
                    truth = clip.motions[index]
                    errors.append(registration_error(result.motion_in_input(), truth, (640, 512)))
        out[name] = {
            "change": change,
            "error_mean_px": round(float(np.mean(errors)), 4),
            "error_p95_px": round(float(np.percentile(errors, 95)), 4),
            "error_max_px": round(float(np.max(errors)), 4),
        }
    front = MotionFrontEnd()
    working = [front.preprocess(f)[0] for f in gusty_clip(timing_frames, seed=0).frames]
    estimators = {
        name: EgoMotionEstimator(dataclasses.replace(SHIPPED, **change))
        for name, change in STAGE_A_VARIANTS.items()
    }
    times: dict[str, list[float]] = {name: [] for name in estimators}
    for frame in tqdm(working, desc="stage A time", disable=None):
        for name, estimator in estimators.items():
            start = time.perf_counter()
            estimator.update(frame)
            times[name].append((time.perf_counter() - start) * 1e3)
    for name, values in times.items():
        out[name]["stage_a_median_ms"] = round(float(np.median(values[1:])), 4)
    return out


def interleave_costs(peer_model: Path, block: int, rounds: int, frames: int) -> dict:
    """Peer / EMTS per round as `emts bench --peer-yolo` measures it (frame by frame) and in
    blocks of ``block`` frames, one round of each in turn."""
    from emts.apps.peer import run_peer

    out: dict[str, list[dict]] = {"per frame": [], f"blocks of {block}": []}
    for _ in range(rounds):
        for mode, size in (("per frame", 1), (f"blocks of {block}", block)):
            out[mode] += run_peer(peer_model, frames=frames, threads=2, rounds=1, block=size)[
                "rounds"
            ]
    return {
        mode: {
            "rounds": rows,
            "ratio_median": round(float(np.median([r["ratio"] for r in rows])), 2),
        }
        for mode, rows in out.items()
    }


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [k for k in ("lk", "stage-a", "interleave") if k in report]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, part in zip(axes[0], panels, strict=True):
        if part == "lk":
            items = report["lk"]["median_ms"]
            ax.barh(list(items), list(items.values()), color="tab:blue")
            ax.invert_yaxis()
            ax.set_xlabel("ms per LK call (median)")
            ax.set_title("Stage A's LK call at 320x256")
            ax.tick_params(axis="y", labelsize=7)
        elif part == "stage-a":
            for name, row in report["stage-a"].items():
                ax.scatter(row["stage_a_median_ms"], row["error_mean_px"], s=30)
                ax.annotate(name, (row["stage_a_median_ms"], row["error_mean_px"]), fontsize=7)
            ax.set_xlabel("Stage A ms a frame (median)")
            ax.set_ylabel("registration error, mean px at 640x512")
            ax.set_title("Stage A: time against accuracy (gusty clips)")
        else:
            for mode, row in report["interleave"].items():
                ratios = [r["ratio"] for r in row["rounds"]]
                ax.plot(
                    range(1, len(ratios) + 1), ratios, "o-", label=f"{mode}: {row['ratio_median']}x"
                )
            ax.axhline(30, color="grey", ls="--", lw=1, label="issue 11's 30x")
            ax.set_xticks(range(1, len(ratios) + 1))
            ax.set_xlabel("round")
            ax.set_ylabel("YOLOv8n / EMTS")
            ax.set_title("the peer ratio by interleaving")
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--parts", default="interleave,lk,stage-a")
    parser.add_argument("--peer-yolo", type=Path, help="peer ONNX for the interleave part")
    parser.add_argument("--block", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--frames", type=int, default=300)
    args = parser.parse_args(argv)
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = set(parts) - {"interleave", "lk", "stage-a"}
    if unknown:
        print(f"speed_levers: unknown part(s) {sorted(unknown)}")
        return 2
    if "interleave" in parts and (args.peer_yolo is None or not args.peer_yolo.is_file()):
        print("speed_levers: the interleave part needs --peer-yolo MODEL.onnx (an existing file)")
        return 2
    set_threads(2)
    report: dict = {"opencv": cv2.__version__, "threads": 2}
    if "lk" in parts:
        report["lk"] = lk_costs(stage_a_frames(120))
        print(json.dumps(report["lk"], indent=1))
    if "stage-a" in parts:
        report["stage-a"] = stage_a_costs(frames=args.frames)
        print(json.dumps(report["stage-a"], indent=1))
    if "interleave" in parts:
        report["interleave"] = interleave_costs(
            args.peer_yolo, args.block, args.rounds, args.frames
        )
        print(json.dumps(report["interleave"], indent=1))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "speed_levers.json").write_text(json.dumps(report, indent=1) + "\n")
    plot(report, args.out / "speed_levers.png")
    print(f"wrote {args.out}/speed_levers.json and .png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
