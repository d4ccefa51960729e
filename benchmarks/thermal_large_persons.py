"""Stage C on real thermal persons seen from lower down: HIT-UAV val stills magnified.

HIT-UAV's persons are small (median 19 px tall at 640x512, none over 40): the thermal model
runs at 512x384 for them. A follow-me drone flying lower sees the same people two to five
times taller. This benchmark magnifies each val still that holds a person by ``z`` (a
640/z x 512/z crop around a randomly chosen person, offset by up to 0.3 of the crop, cubic
upscale back to 640x512; persons not wholly inside the crop stay in the plate, unlabelled and
still) and makes it a 4-frame pseudo-clip as `emts eval real` does (persons walking 0.5-1.5 px
a frame times z in random directions, the camera drifting up to 4 px a frame), then scores the
last frame. The magnified stills are real thermal signatures, softer than a lower flight would
see them (cubic upscaling adds no detail).

Stage C runs as the pipeline runs it on thermal frames -- the thermal model at 512x384, temporal
scores -- with and without the coarse pass (:mod:`emts.stages.c_detect.temporal`: the same model at
256x192, its detections 50 px tall or more), on the same Stages A-B. ``--taps N`` also taps the
person on N stills per magnification and tracks them through 60 frames (:func:`run_taps`). Writes
OUT/thermal_large_persons.json and OUT/thermal_large_persons.png (AP against magnification).

    python benchmarks/thermal_large_persons.py --hituav ../shared/data/hit-uav --out DIR \
        [--zooms 2,3,4,5] [--seed 0] [--model src/emts/models/detector.thermal.onnx] [--taps 80]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import cv2
import numpy as np
from tqdm import tqdm

from emts.eval.metrics import ImageResult
from emts.eval.real import EVAL_THRESHOLD
from emts.eval.real_frames import CAMERA_DRIFT, PERSON_SPEED, _front_end, eval_camera
from emts.eval.real_metrics import TAU_S, multi_person_metrics
from emts.front_end import channel_key
from emts.geometry import Frame
from emts.stages.c_detect.detector import Detector
from emts.stages.c_detect.stage import shipped_detector
from emts.stages.c_detect.temporal import TemporalDetector
from emts.synth.plates import read_hituav
from emts.synth.tier2 import pseudo_clip

PASSES = ("fine pass only", "with the coarse pass")


def magnified(still: np.ndarray, persons: list, z: float, rng: np.random.Generator):
    """(the still magnified ``z`` times around one of ``persons``, the persons wholly inside)."""
    height, width = still.shape
    crop_w, crop_h = width / z, height / z
    chosen = np.asarray(persons[int(rng.integers(len(persons)))], float)
    centre = chosen[:2] + chosen[2:] / 2 + rng.uniform(-0.3, 0.3, 2) * (crop_w, crop_h)
    x0 = float(np.clip(centre[0], crop_w / 2, width - crop_w / 2)) - crop_w / 2
    y0 = float(np.clip(centre[1], crop_h / 2, height - crop_h / 2)) - crop_h / 2
    matrix = np.array([[z, 0, -x0 * z], [0, z, -y0 * z]])
    image = cv2.warpAffine(
        still, matrix, (width, height), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REFLECT_101
    )
    boxes = []
    for x, y, w, h in persons:
        box = [(x - x0) * z, (y - y0) * z, w * z, h * z]
        if box[0] >= 0 and box[1] >= 0 and box[0] + box[2] <= width and box[1] + box[3] <= height:
            boxes.append(box)
    return image, boxes


def _working_boxes(detections, geometry) -> tuple[np.ndarray, np.ndarray]:
    boxes = np.array([d.box for d in detections], float).reshape(-1, 4)
    if len(boxes):
        boxes = geometry.boxes(boxes, Frame.NETWORK, Frame.WORKING)
    return boxes, np.array([d.score for d in detections], float)


def run_zoom(hituav: Path, z: float, seed: int, detector: Detector) -> dict:
    stages = {
        PASSES[0]: TemporalDetector(detector, coarse=None),
        PASSES[1]: TemporalDetector(detector),
    }
    if stages[PASSES[1]].coarse is None:
        raise SystemExit(f"{detector.path.name} at {detector.network_size}: no coarse pass")
    key = channel_key(detector)
    results = {name: [] for name in stages}
    heights = []
    entries = read_hituav(hituav, "val")
    for number, (name, entry) in enumerate(tqdm(entries, desc=f"x{z:g}", unit="still")):
        if not entry["persons"]:
            continue
        still = cv2.imread(str(hituav / "val" / name), cv2.IMREAD_GRAYSCALE)
        if still is None:
            raise SystemExit(f"{hituav / 'val' / name}: missing or unreadable")
        rng = np.random.default_rng([seed, number])
        image, persons = magnified(still, entry["persons"], z, rng)
        if not persons:
            continue
        clip = pseudo_clip(
            image,
            persons,
            rng,
            frames=4,
            zoom=False,
            person_speed=(PERSON_SPEED[0] * z, PERSON_SPEED[1] * z),
            random_heading=True,
            camera=eval_camera(),
            drift=CAMERA_DRIFT,
        )
        front = _front_end(key)
        fronts = [front.step(frame) for frame in clip.frames]
        geometry = fronts[-1].geometry
        truth = geometry.boxes(clip.person_boxes[-1], Frame.INPUT, Frame.WORKING).reshape(-1, 4)
        heights.extend(truth[:, 3].tolist())
        for stage_name, stage in stages.items():
            stage.reset()
            for result in fronts:
                detections = stage.on_frame(result)
            boxes, scores = _working_boxes(detections, geometry)
            ignore = np.zeros(len(truth), bool)
            results[stage_name].append(ImageResult(truth, ignore, boxes, scores))
    out = {
        "magnification": z,
        "clips": len(results[PASSES[0]]),
        "persons": len(heights),
        "person_height_px_p10_p50_p90": np.percentile(heights, [10, 50, 90]).round(1).tolist(),
    }
    for stage_name, images in results.items():
        metrics = multi_person_metrics(images)
        out[stage_name] = {k: v for k, v in metrics.items() if not k.startswith("_")}
    return out


TAP_FRAMES, TAP_AT = 60, 3


def tap_lock_recall(pipeline, clip, k: int, tap_at: int = TAP_AT, tap=None) -> float:
    """``pipeline`` fed ``clip`` (a pseudo-clip), person ``k`` tapped at frame ``tap_at`` (on
    their box's centre, or at ``tap``, input px): the share of the later frames whose
    reported target's centre lies in that person's box grown by a fifth each side."""
    box = clip.person_boxes[tap_at][k]
    tap = box[:2] + box[2:] / 2 if tap is None else tap
    hits = 0
    for t, frame in enumerate(clip.frames):
        if t == tap_at:
            pipeline.lock(*tap)
        result = pipeline.step(frame)
        if t < tap_at or result.target is None:
            continue
        x, y, w, h = clip.person_boxes[t][k]
        cx, cy = np.asarray(result.target.box[:2]) + np.asarray(result.target.box[2:]) / 2
        hits += abs(cx - (x + w / 2)) <= 0.7 * w and abs(cy - (y + h / 2)) <= 0.7 * h
    return hits / (len(clip.frames) - tap_at)


def run_taps(hituav: Path, z: float, stills: int, seed: int) -> dict:
    """Tap tracking: the first ``stills`` val stills holding a person, magnified ``z`` times,
    as 60-frame pseudo-clips; the person nearest the frame's centre tapped at frame 3; a
    frame counts where the reported target's centre lies in that person's box grown by a fifth
    each side. The whole pipeline (Pipeline.default, the thermal model, no auto-lock), with
    the coarse pass and without."""
    from emts.pipeline import Pipeline

    entries = [e for e in read_hituav(hituav, "val") if e[1]["persons"]][:stills]
    shares: dict[str, list[float]] = {name: [] for name in PASSES}
    for number, (name, entry) in enumerate(tqdm(entries, desc=f"taps x{z:g}", unit="clip")):
        still = cv2.imread(str(hituav / "val" / name), cv2.IMREAD_GRAYSCALE)
        rng = np.random.default_rng([seed, number, 1])
        image, persons = magnified(still, entry["persons"], z, rng)
        clip = pseudo_clip(
            image,
            persons,
            rng,
            frames=TAP_FRAMES,
            zoom=False,
            person_speed=(PERSON_SPEED[0] * z, PERSON_SPEED[1] * z),
            random_heading=True,
            camera=eval_camera(),
            drift=CAMERA_DRIFT,
        )
        boxes = clip.person_boxes[TAP_AT]
        centres = boxes[:, :2] + boxes[:, 2:] / 2
        k = int(np.argmin(np.linalg.norm(centres - [320, 256], axis=1)))
        for stage_name, coarse in zip(PASSES, (False, True), strict=True):
            pipeline = Pipeline.default(model="thermal", coarse_pass=coarse, auto_lock=False)
            shares[stage_name].append(tap_lock_recall(pipeline, clip, k))
    return {
        name: {
            "runs": len(v),
            "mean_lock_recall": round(float(np.mean(v)), 3),
            "runs_at_0.9": int(np.sum(np.array(v) >= 0.9)),
        }
        for name, v in shares.items()
    }


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    heights = [r["person_height_px_p10_p50_p90"][1] for r in rows]
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for stage_name, colour in zip(PASSES, ("tab:gray", "tab:red"), strict=True):
        for metric, style in (("AP@0.25", "-o"), ("AP@0.5", "--s")):
            values = [r[stage_name][metric] for r in rows]
            ax.plot(heights, values, style, color=colour, label=f"{stage_name}, {metric}")
    for r, h in zip(rows, heights, strict=True):
        ax.annotate(f"x{r['magnification']:g}", (h, 0.95), ha="center", fontsize=8)
    ax.set_xlabel("median person height, px at 640x512")
    ax.set_ylabel("AP")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.set_title("Thermal model at 512x384 on magnified HIT-UAV val persons")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hituav", default="../shared/data/hit-uav", help="HIT-UAV folder")
    parser.add_argument("--out", required=True, help="report folder")
    parser.add_argument("--zooms", default="2,3,4,5", help="magnifications (default: 2,3,4,5)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", help="detector ONNX (default: the shipped thermal model)")
    parser.add_argument(
        "--taps",
        type=int,
        metavar="N",
        help="also tap-track the person on N stills per magnification (60-frame clips, the "
        "shipped thermal pipeline with the coarse pass and without; ~2.5 s a still)",
    )
    args = parser.parse_args()
    hituav = Path(args.hituav)
    if not (hituav / "val.json").is_file():
        raise SystemExit(f"{hituav}: no val.json (expected the HIT-UAV folder)")
    zooms = [float(v) for v in args.zooms.split(",")]
    if args.model:
        detector = Detector(args.model, threshold=EVAL_THRESHOLD)
    else:
        detector = shipped_detector("thermal", threshold=EVAL_THRESHOLD)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for z in zooms:
        row = run_zoom(hituav, z, args.seed, detector)
        rows.append(row)
        cells = [f"{row['magnification']:g}x", f"median {row['person_height_px_p10_p50_p90'][1]}"]
        for stage_name in PASSES:
            m = row[stage_name]
            cells.append(
                f"{stage_name}: AP@0.25 {m['AP@0.25']:.3f} AP@0.5 {m['AP@0.5']:.3f} "
                f"recall {m[f'recall@{TAU_S:g}']} FP/image {m[f'fp_per_image@{TAU_S:g}']}"
            )
        print(" | ".join(cells), flush=True)
        if args.taps:
            row["tap"] = run_taps(hituav, z, args.taps, args.seed)
            taps = [
                f"{n}: {t['mean_lock_recall']} ({t['runs_at_0.9']} of {t['runs']} >= 0.9)"
                for n, t in row["tap"].items()
            ]
            print(f"  tap lock recall x{z:g}: " + " | ".join(taps), flush=True)
        report = {
            "command": " ".join(["python", *sys.argv]),
            "model": detector.path.name,
            "network_size": list(detector.network_size),
            "seed": args.seed,
            "rows": rows,
        }
        (out / "thermal_large_persons.json").write_text(json.dumps(report, indent=1) + "\n")
    plot(rows, out / "thermal_large_persons.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
