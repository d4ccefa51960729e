"""Stage C on a second real colour clip, labelled by its static camera: PETS 2009 ``vtest.avi``.

OpenCV's sample video (Debian's ``opencv-doc``: ``apt-get download opencv-doc && dpkg -x
opencv-doc_*.deb x``; ``x/usr/share/doc/opencv-doc/examples/data/vtest.avi``; never commit or
train on it): real pedestrians, 5-8 at a time, 40-100 px tall, seen from a static elevated
camera, 768x576, 795 frames. It has no labels, but its camera stands still, so whatever moves
is found by differencing each frame with the clip's median: the **movers** (blobs at least 25
px tall; a group walking together is one blob, and a flapping ribbon is one too). A motion
detector should put a box on every mover and nowhere else, so per frame at tau_s:

* mover recall: the share of movers with a detection whose centre lies inside the mover's box
  (grown by a fifth each side);
* false positives per frame: detections whose centre lies inside no grown mover box.

Stage C runs as the pipeline runs it on colour frames (the default model, temporal scores), its
detections three ways on the same decode: the network's boxes and scores, boxes fitted to the
person's own pixels without trimming, and the shipped colour evidence (fitted and trimmed;
:mod:`emts.stages.c_detect.boxfit`). ``--gust SEED`` warps every frame (and the movers) along a
gusty hovering camera path (``emts eval track --gust``'s), so that Stage A has work to do.
``--track`` also runs the whole pipeline under auto-lock (``emts track --lock auto``'s) on the same
frames and counts the frames it reports a lock whose centre lies on a mover, and on none. Writes
OUT/pets_movers.json and OUT/pets_movers.png (the false positives frame by frame).

    python benchmarks/pets_movers.py --video x/usr/share/doc/opencv-doc/examples/data/vtest.avi \
        --out /tmp/pets [--gust 1] [--track]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import cv2
import numpy as np
from tqdm import tqdm

from emts.eval.real_metrics import TAU_S
from emts.eval.track_eval import _box_corners, _gust_path, _project
from emts.front_end import MotionFrontEnd
from emts.geometry import Frame
from emts.stages.appearance import appearance_view
from emts.stages.c_detect.boxfit import DEFAULT_BOX_FIT, fit_detections, look_ahead
from emts.stages.c_detect.stage import detector_stage, shipped_detector

GROW = 0.2  # a mover's box grown by this share of its size each side
MIN_HEIGHT, MIN_AREA = 25, 150  # px at 768x576: a mover blob
CONFIGS = {
    "network boxes": None,
    "fitted, not trimmed": dataclasses.replace(DEFAULT_BOX_FIT, trim_spill=None, min_motion=None),
    "fitted and trimmed, no motion check": dataclasses.replace(DEFAULT_BOX_FIT, min_motion=None),
    "fitted, trimmed, moving (shipped)": DEFAULT_BOX_FIT,
}


def read_video(path: str) -> list[np.ndarray]:
    """The video's frames (BGR)."""
    capture = cv2.VideoCapture(path)
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(frame)
    if not frames:
        raise SystemExit(f"{path}: no frames read (missing or not a video)")
    return frames


def movers(frames: list[np.ndarray]) -> list[np.ndarray]:
    """Per frame, the (n, 4) [x, y, w, h] boxes of what moves against the clip's median."""
    background = np.median(np.stack(frames[::5]), axis=0).astype(np.uint8)
    boxes = []
    for frame in frames:
        difference = cv2.GaussianBlur(cv2.absdiff(frame, background).max(axis=2), (5, 5), 0)
        mask = (difference > 30).astype(np.uint8)
        mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((9, 5), np.uint8))
        mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
        _, _, stats, _ = cv2.connectedComponentsWithStats(mask)
        keep = (stats[1:, 3] >= MIN_HEIGHT) & (stats[1:, 4] >= MIN_AREA)
        boxes.append(stats[1:][keep, :4].astype(float))
    return boxes


def warped(box: np.ndarray, pose: np.ndarray) -> np.ndarray:
    """The box around ``box`` carried by the camera ``pose`` (3x3)."""
    corners = _project(pose, _box_corners(box))
    low, high = corners.min(axis=0), corners.max(axis=0)
    return np.array([*low, *(high - low)], float)


def inside(points: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """(points, boxes) bool: point inside the box grown by GROW each side."""
    if not len(points) or not len(boxes):
        return np.zeros((len(points), len(boxes)), bool)
    low = boxes[:, :2] - GROW * boxes[:, 2:]
    high = boxes[:, :2] + (1 + GROW) * boxes[:, 2:]
    p = points[:, None, :]
    return np.all((p >= low[None]) & (p <= high[None]), axis=2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--video", required=True, help="vtest.avi (PETS 2009, from opencv-doc)")
    parser.add_argument("--out", required=True, help="report folder")
    parser.add_argument("--gust", type=int, default=None, help="warp along a gusty path (seed)")
    parser.add_argument("--skip", type=int, default=5, help="first frames not scored (warm-up)")
    parser.add_argument("--track", action="store_true", help="also auto-lock (emts track)")
    args = parser.parse_args()
    frames = read_video(args.video)
    truth = movers(frames)
    shaken = []  # the frames as the camera delivers them, and their movers
    stage = detector_stage(shipped_detector("default"), "temporal")
    look_ahead(stage, DEFAULT_BOX_FIT)
    front = MotionFrontEnd(network_size=stage.network_size)
    path = _gust_path(frames[0].shape, args.gust) if args.gust is not None else None
    found = {name: 0 for name in CONFIGS}
    false = {name: [] for name in CONFIGS}
    shown = {name: 0 for name in CONFIGS}
    total = 0
    for index, frame in enumerate(tqdm(frames, desc="pets", unit="frame")):
        boxes_true = truth[index]
        if path is not None:
            pose = path.pose() if index == 0 else path.step()
            size = (frame.shape[1], frame.shape[0])
            frame = cv2.warpAffine(frame, pose[:2], size, borderMode=cv2.BORDER_REFLECT_101)
            boxes_true = np.array([warped(b, pose) for b in boxes_true]).reshape(-1, 4)
            centres = boxes_true[:, :2] + boxes_true[:, 2:] / 2  # shaken out of view: gone
            seen = np.all((centres >= 0) & (centres < size), axis=1)
            boxes_true = boxes_true[seen]
        if args.track:
            shaken.append((frame, boxes_true))
        result = front.step(frame)
        decoded = stage.on_frame(result)
        view = appearance_view(frame, result)
        if index < args.skip:
            continue
        total += len(boxes_true)
        for name, config in CONFIGS.items():
            kept = fit_detections(decoded, view, result.geometry, config, TAU_S, result.channels)
            boxes = result.geometry.boxes(
                np.array([d.box for d in kept]).reshape(-1, 4), Frame.NETWORK, Frame.INPUT
            )
            hits = inside(boxes[:, :2] + boxes[:, 2:] / 2, boxes_true)
            found[name] += int(hits.any(axis=0).sum())
            false[name].append(int((~hits.any(axis=1)).sum()))
            shown[name] += len(kept)
    scored = len(frames) - args.skip
    report = {
        "command": "python benchmarks/pets_movers.py --video vtest.avi --out "
        + str(args.out)
        + (f" --gust {args.gust}" if args.gust is not None else "")
        + (" --track" if args.track else ""),
        "video": Path(args.video).name,
        "frames_scored": scored,
        "movers": total,
        "gust": args.gust,
        "tau_s": TAU_S,
        "results": {
            name: {
                "mover_recall": round(found[name] / max(total, 1), 4),
                "fp_per_frame": round(float(np.mean(false[name])), 4),
                "detections_per_frame": round(shown[name] / max(scored, 1), 3),
            }
            for name in CONFIGS
        },
    }
    if args.track:
        fps = cv2.VideoCapture(args.video).get(cv2.CAP_PROP_FPS) or 30.0
        report["auto_lock"] = auto_lock(shaken, fps)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "pets_movers.json").write_text(json.dumps(report, indent=1) + "\n")
    _plot(false, args.skip, out / "pets_movers.png", report)
    print(f"{scored} frames, {total} movers (gust {args.gust})")
    for name, row in report["results"].items():
        print(f"{name:30s} recall {row['mover_recall']:.3f}  FP/frame {row['fp_per_frame']:.3f}")
    if args.track:
        print("auto-lock, frames:", report["auto_lock"])


def auto_lock(shaken: list[tuple[np.ndarray, np.ndarray]], fps: float) -> dict:
    """The shipped pipeline under auto-lock over ``shaken`` (frame, movers) at ``fps`` (as
    ``emts track`` runs a video): the frames it reports a lock (and a verified one) whose
    centre lies on a mover, and on none."""
    from emts.pipeline import Pipeline

    pipeline = Pipeline.default(auto_lock=True)
    pipeline.fps = fps
    counts = dict.fromkeys(
        ["on_mover", "on_nothing", "verified_on_mover", "verified_on_nothing"], 0
    )
    for frame, boxes_true in tqdm(shaken, desc="auto-lock", unit="frame"):
        result = pipeline.step(frame)
        if result.mode != "locked" or result.target is None:
            continue
        box = np.asarray(result.target.box, float)
        on = "on_mover" if inside((box[:2] + box[2:] / 2)[None], boxes_true).any() else "on_nothing"
        counts[on] += 1
        if result.verified:
            counts[f"verified_{on}"] += 1
    return {"frames": len(shaken), **counts}


def _plot(false: dict, skip: int, path: Path, report: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 3.5))
    for name, values in false.items():
        row = report["results"][name]
        smooth = np.convolve(values, np.ones(15) / 15, mode="same")
        label = f"{name}: recall {row['mover_recall']:.2f}, FP/frame {row['fp_per_frame']:.2f}"
        ax.plot(np.arange(skip, skip + len(values)), smooth, label=label)
    ax.set_xlabel("frame")
    ax.set_ylabel("false positives (15-frame mean)")
    ax.set_title(f"PETS 2009 vtest.avi at tau_s {TAU_S}, gust {report['gust']}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
