"""Following one person of a group: tap tracking on real thermal stills (HIT-UAV val).

On each val still with two or more persons, one person standing within 1.5 of their own heights of
another (a pair or a group; half of HIT-UAV val's persons do; ``--select alone``: one 3 or more
heights from every other, the control) is tapped at frame 3 of a 60-frame pseudo-clip (`emts eval
real`'s: every person walking 0.5-1.5 px/frame in a random direction at 640x512, the camera
drifting); the whole pipeline follows them (`Pipeline.default(model="thermal")`, no auto-lock). A
frame counts where the reported target's centre lies in the tapped person's box grown by a fifth
each side; lock recall = such frames / frames after the tap. The tap lands on the person's centre,
or with ``--tap-jitter F`` uniformly within F of their box's width and height of it (an operator's
finger on a small person). Runs the pipeline as shipped and, with ``--compare-square``, with
CenterNet's 3x3 peaks alone (``emts.stages.c_detect.detector.PEAK_KERNEL``, as before 2026-11-29's
second peaks), with ``--compare-uncentred``, with the lock on the tapped detection's or blob's box
as it is (``AcquisitionConfig.tap_recentre_offset`` 0, as before 2026-11-29, night).

    python benchmarks/group_taps.py --hituav ../shared/data/hit-uav --out DIR --seeds 0,1,2
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import cv2
import numpy as np
from tqdm import tqdm

import emts.stages.c_detect.detector
from emts.config import AcquisitionConfig
from emts.eval.real_frames import CAMERA_DRIFT, PERSON_SPEED, eval_camera
from emts.eval.real_metrics import spacings
from emts.pipeline import Pipeline
from emts.synth.plates import read_hituav
from emts.synth.tier2 import pseudo_clip

sys.path.insert(0, str(Path(__file__).parent))
from thermal_large_persons import tap_lock_recall  # noqa: E402

FRAMES, TAP_AT, CLOSE, ALONE = 60, 3, 1.5, 3.0
SHIPPED = "shipped"
# name -> (Stage C's peak kernel, the acquisition's config)
VARIANTS = {SHIPPED: (emts.stages.c_detect.detector.PEAK_KERNEL.copy(), AcquisitionConfig())}
SQUARE = {"3x3 peaks only (before)": (np.ones((3, 3), np.uint8), AcquisitionConfig())}
UNCENTRED = {
    "lock on the box as it is (before)": (
        emts.stages.c_detect.detector.PEAK_KERNEL.copy(),
        AcquisitionConfig(tap_recentre_offset=0.0),
    )
}


def follow(clip, k: int, variant: tuple, tap: np.ndarray) -> float:
    """Lock recall of the pipeline tapped at ``tap`` on person ``k`` at frame TAP_AT."""
    kernel, acquisition = variant
    emts.stages.c_detect.detector.PEAK_KERNEL = kernel
    pipeline = Pipeline.default(model="thermal", auto_lock=False)
    pipeline.acquisition.config = acquisition
    return tap_lock_recall(pipeline, clip, k, TAP_AT, tap)


def walking_clip(hituav: Path, name: str, entry: dict, rng: np.random.Generator):
    """HIT-UAV val still ``name`` as a FRAMES-frame pseudo-clip as ``emts eval real`` makes
    them: its persons (``entry``) walking 0.5-1.5 px a frame in random directions on the
    inpainted plate, the camera drifting."""
    still = cv2.imread(str(hituav / "val" / name), cv2.IMREAD_GRAYSCALE)
    if still is None:
        raise SystemExit(f"error: {hituav / 'val' / name} missing or unreadable")
    return pseudo_clip(
        still,
        entry["persons"],
        rng,
        frames=FRAMES,
        zoom=False,
        person_speed=PERSON_SPEED,
        random_heading=True,
        camera=eval_camera(),
        drift=CAMERA_DRIFT,
    )


def run(
    hituav: Path, seed: int, variants: dict, stills: int | None, select: str, jitter: float
) -> dict:
    entries = [e for e in read_hituav(hituav, "val") if len(e[1]["persons"]) >= 2][:stills]
    recalls: dict[str, list[float]] = {name: [] for name in variants}
    for number, (name, entry) in enumerate(tqdm(entries, desc=f"seed {seed}", unit="still")):
        rng = np.random.default_rng([seed, number, 2])  # the clip's, then the tapped person's
        clip = walking_clip(hituav, name, entry, rng)
        spacing = spacings(clip.person_boxes[TAP_AT])
        eligible = np.nonzero(spacing < CLOSE if select == "close" else spacing >= ALONE)[0]
        if not len(eligible):
            continue
        k = int(eligible[rng.integers(len(eligible))])
        box = clip.person_boxes[TAP_AT][k]
        # its own stream: the clips and the tapped persons stay those of jitter 0
        offset = np.random.default_rng([seed, number, 7]).uniform(-1, 1, 2)
        tap = box[:2] + box[2:] / 2 + jitter * box[2:] * offset
        for label, variant in variants.items():
            recalls[label].append(follow(clip, k, variant, tap))
    return recalls


def summary(values: list[float]) -> dict:
    v = np.asarray(values)
    return {
        "runs": len(v),
        "mean_lock_recall": round(float(v.mean()), 3) if len(v) else None,
        "runs_at_0.9": int((v >= 0.9).sum()),
        "runs_below_0.5": int((v < 0.5).sum()),
    }


def plot(recalls: dict[str, list[float]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    bins = np.linspace(0, 1, 11)
    for label, values in recalls.items():
        label = f"{label}: mean {np.mean(values):.3f}"
        ax.hist(values, bins, histtype="step", linewidth=2, label=label)
    ax.set_xlabel("lock recall of the tapped person (60-frame clip)")
    ax.set_ylabel("runs")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hituav", required=True, help="HIT-UAV root (val.json, val/)")
    parser.add_argument("--out", required=True, help="folder for group_taps.json / .png")
    parser.add_argument("--seeds", default="0", help="comma-separated pseudo-clip seeds (0)")
    parser.add_argument("--stills", type=int, default=None, help="first N stills only")
    parser.add_argument("--compare-square", action="store_true", help="also 3x3 peaks only")
    parser.add_argument(
        "--compare-uncentred", action="store_true", help="also the lock on the box as it is"
    )
    parser.add_argument(
        "--select",
        choices=["close", "alone"],
        default="close",
        help=f"tap a person within {CLOSE} heights of another (default) or {ALONE}+ from all",
    )
    parser.add_argument(
        "--tap-jitter",
        type=float,
        default=0.0,
        help="tap uniformly within this fraction of the box's size of its centre (0)",
    )
    args = parser.parse_args(argv)
    root, out = Path(args.hituav), Path(args.out)
    if not (root / "val.json").is_file():
        print(f"error: {root / 'val.json'} not found (pass the HIT-UAV root)", file=sys.stderr)
        return 2
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        print(f"error: --seeds must be integers, got {args.seeds!r}", file=sys.stderr)
        return 2
    if not 0.0 <= args.tap_jitter <= 0.5:
        print(f"error: --tap-jitter must be in [0, 0.5], got {args.tap_jitter}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    variants = {
        **VARIANTS,
        **(SQUARE if args.compare_square else {}),
        **(UNCENTRED if args.compare_uncentred else {}),
    }
    pooled: dict[str, list[float]] = {name: [] for name in variants}
    per_seed = {}
    for seed in seeds:
        recalls = run(root, seed, variants, args.stills, args.select, args.tap_jitter)
        per_seed[seed] = {name: summary(v) for name, v in recalls.items()}
        print(f"seed {seed}: {per_seed[seed]}")
        for name, v in recalls.items():
            pooled[name] += v
    emts.stages.c_detect.detector.PEAK_KERNEL = VARIANTS[SHIPPED][0]
    whom = f"within {CLOSE} heights of another" if args.select == "close" else f"{ALONE}+ from all"
    title = f"Tap on a person {whom}, jitter {args.tap_jitter}, HIT-UAV val, seeds {args.seeds}"
    report = {
        "title": title,
        "command": "python benchmarks/group_taps.py " + " ".join(argv or sys.argv[1:]),
        "pooled": {name: summary(v) for name, v in pooled.items()},
        "per_seed": per_seed,
        "lock_recalls": pooled,
    }
    (out / "group_taps.json").write_text(json.dumps(report, indent=1) + "\n")
    plot(pooled, out / "group_taps.png", title)
    print(f"pooled: {report['pooled']}")
    print(f"wrote {out / 'group_taps.json'}, group_taps.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
