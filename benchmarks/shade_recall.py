"""How often the detector finds a person in deep shade, against in the sun.

A person walking through a building's or a tree canopy's shade is 3-5x darker than on the
sunlit ground beside it, and so are their contrast and their motion residual. This measures,
per detector model, the share of frames where Stage C reports a box on the person (IoU >= 0.25,
score above the threshold; the pipeline unlocked, as it runs before a tap), split by whether
the person stands in shade:

* **uav123-person12** frames 0-299 (the clip's labels of 0-200 and ours of 201-299,
  ``benchmarks/labels/``): shade where the ground in a ring around the person's box is less
  than half as bright as the frame's sunlit ground (its 75th percentile of gray). The walker
  enters a building's shade at frame ~250.
* a synthetic set made with ``emts synth bench --hard-shade 1`` (optional, ``--synth``): each
  person's ``shaded`` label (``>= 0.5``: in shade, ``<= 0.05``: in the sun), from frame 3 of
  each clip on (the motion channels need a few frames), persons at least half visible.

    python benchmarks/shade_recall.py --clip ../shared/data/uav123-person12 \\
        [--synth DIR] [--model NAME=PATH ...] --out DIR

Writes ``DIR/shade_recall.json`` and ``DIR/shade_recall.png`` (recall bars; the person12
timeline of hits with the shaded frames marked). Both hold per-frame results on person12:
development only, never committed (the repository keeps the aggregate figures,
``reports/real/shade/``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import cv2
import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent / "labels"))

from person12_gt import full_ground_truth  # noqa: E402

from emts.eval.real_metrics import MATCH_IOU  # noqa: E402
from emts.geometry import box_iou  # noqa: E402
from emts.pipeline import Pipeline  # noqa: E402
from emts.stages.c_detect.detector import Detector, default_model_path  # noqa: E402
from emts.stages.c_detect.stage import detector_stage  # noqa: E402

LAST_FRAME = 299
SHADE_RATIO = 0.5  # ring around the person / the frame's sunlit ground
WARMUP = 3  # synthetic clips: frames before the motion channels carry a mover


def in_shade(gray: np.ndarray, box: np.ndarray) -> bool:
    """Is the ground around ``box`` (a ring one box width / half a height wide) less than
    ``SHADE_RATIO`` as bright as the frame's sunlit ground?"""
    x, y, w, h = box
    h_img, w_img = gray.shape
    x0, y0 = int(max(x - w, 0)), int(max(y - h / 2, 0))
    x1, y1 = int(min(x + 2 * w, w_img)), int(min(y + 1.5 * h, h_img))
    ring = np.ones((y1 - y0, x1 - x0), bool)
    bx0, by0 = int(max(x - x0, 0)), int(max(y - y0, 0))
    ring[by0 : by0 + int(h) + 1, bx0 : bx0 + int(w) + 1] = False
    ground = float(np.median(gray[y0:y1, x0:x1][ring]))
    return ground < SHADE_RATIO * float(np.percentile(gray, 75))


def pipeline(model: Path) -> Pipeline:
    return Pipeline(detector_stage(Detector(model, threads=1)), None, auto_lock=False, threads=1)


def boxes_of(result) -> np.ndarray:
    return np.array([b for b, _ in result.detections], float).reshape(-1, 4)


def person12(clip: Path, models: dict[str, Path]) -> dict:
    truth = full_ground_truth(clip)[: LAST_FRAME + 1]
    paths = sorted((clip / "frames").iterdir())[: LAST_FRAME + 1]
    frames = [cv2.imread(str(p)) for p in paths]
    shade = [
        bool(np.isfinite(t).all() and in_shade(cv2.cvtColor(f, cv2.COLOR_BGR2GRAY), t))
        for f, t in zip(frames, truth, strict=True)
    ]
    out = {"frames": len(frames), "shaded_frames": int(sum(shade)), "shade": shade, "models": {}}
    for name, model in models.items():
        pipe = pipeline(model)
        hits = []
        for frame, t in tqdm(zip(frames, truth, strict=True), total=len(frames), desc=name):
            found = boxes_of(pipe.step(frame))
            hits.append(bool(np.isfinite(t).all() and (box_iou(t, found) >= MATCH_IOU).any()))
        out["models"][name] = {"hits": hits, **_split(hits, shade, truth)}
    return out


def _split(hits, shade, truth) -> dict:
    labelled = [bool(np.isfinite(t).all()) for t in truth]
    sun = [h for h, s, k in zip(hits, shade, labelled, strict=True) if k and not s]
    dark = [h for h, s, k in zip(hits, shade, labelled, strict=True) if k and s]
    return {
        "recall_sun": round(float(np.mean(sun)), 4) if sun else None,
        "recall_shade": round(float(np.mean(dark)), 4) if dark else None,
        "frames_sun": len(sun),
        "frames_shade": len(dark),
    }


def synthetic(folder: Path, models: dict[str, Path]) -> dict:
    from emts.synth.store import ClipSet

    clips = ClipSet(folder)
    out = {"set": str(folder), "clips": len(clips), "models": {}}
    for name, model in models.items():
        pipe = pipeline(model)
        counts = {"sun": [0, 0], "shade": [0, 0]}
        for position in tqdm(range(len(clips)), desc=f"{name} synth"):
            clip = clips[position]
            pipe.reset()
            for index, frame in enumerate(clip.frames):
                found = boxes_of(pipe.step(frame))
                if index < WARMUP:
                    continue
                for person in clip.labels["frames"][index]["persons"]:
                    shaded = person.get("shaded")
                    if person["visible"] < 0.5 or shaded is None:
                        continue
                    key = "shade" if shaded >= 0.5 else "sun" if shaded <= 0.05 else None
                    if key is None:
                        continue
                    overlap = box_iou(np.array(person["box"]), found)
                    counts[key][0] += bool((overlap >= MATCH_IOU).any())
                    counts[key][1] += 1
        out["models"][name] = {
            f"recall_{k}": round(h / n, 4) if n else None for k, (h, n) in counts.items()
        } | {f"persons_{k}": n for k, (_, n) in counts.items()}
    return out


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(result["person12"]["models"])
    panels = [("uav123-person12 0-299", result["person12"]["models"])]
    if "synthetic" in result:
        panels.append(("synthetic, --hard-shade 1", result["synthetic"]["models"]))
    fig = plt.figure(figsize=(12, 3.2 + 0.5 * len(names)))
    grid = fig.add_gridspec(2, len(panels), height_ratios=[3, 1 + 0.4 * len(names)])
    for column, (title, models) in enumerate(panels):
        ax = fig.add_subplot(grid[0, column])
        x = np.arange(len(names))
        for offset, key, colour in (
            (-0.2, "recall_sun", "#e0a030"),
            (0.2, "recall_shade", "#404080"),
        ):
            values = [models[n][key] or 0.0 for n in names]
            ax.bar(x + offset, values, 0.4, color=colour, label=key.split("_")[1])
            for xi, v in zip(x + offset, values, strict=True):
                ax.text(xi, v + 0.01, f"{v:.2f}", ha="center", fontsize=8)
        ax.set_xticks(x, names)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("detection recall (IoU >= 0.25)")
        ax.set_title(title)
        ax.legend(fontsize=8)
    ax = fig.add_subplot(grid[1, :])
    shade = np.array(result["person12"]["shade"])
    frames = np.arange(len(shade))
    ax.fill_between(frames, -0.5, len(names) - 0.5, where=shade, color="#c8c8e0", step="mid")
    for row, name in enumerate(names):
        hits = np.array(result["person12"]["models"][name]["hits"])
        ax.scatter(frames[hits], np.full(hits.sum(), row), s=4, color="k")
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel("person12 frame (shaded band: the walker in shade; dots: detected)")
    ax.set_xlim(0, len(shade))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clip", required=True, help="uav123-person12 folder (frames/)")
    parser.add_argument("--synth", help="a set made with emts synth bench --hard-shade 1")
    parser.add_argument(
        "--model",
        action="append",
        metavar="NAME=PATH",
        help="an ONNX detector to measure (repeat; default: the shipped one as 'shipped')",
    )
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    pairs = [item.split("=", 1) for item in args.model or []]
    models = {name: Path(path) for name, path in pairs} or {"shipped": default_model_path()}
    cv2.setNumThreads(1)
    result = {"person12": person12(Path(args.clip), models)}
    if args.synth:
        result["synthetic"] = synthetic(Path(args.synth), models)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "shade_recall.json").write_text(json.dumps(result) + "\n")
    plot(result, out / "shade_recall.png")
    for part in ("person12", "synthetic"):
        for name, m in result.get(part, {}).get("models", {}).items():
            summary = {k: v for k, v in m.items() if k != "hits"}
            print(part, name, summary)
    print(out / "shade_recall.json")


if __name__ == "__main__":
    main()
