"""How strongly persons stand out from their ground: synthetic clip sets against real frames.

For every labelled person (fully visible, inside the frame): the absolute difference between
the mean of their box and the median of the ring around it (the box grown by half its longer
side, other labelled objects left out), the 90th percentile of the box's pixels' absolute
difference from that median, the ring's standard deviation, and the first ratio over the last,
all in gray levels of the frame as stored. Percentiles 10 / 50 / 90 per source.

    emts synth tier1 --contrast-scale 1 --out data/tier1_c10 --hituav ../shared/data/hit-uav
    python benchmarks/person_contrast.py --sets data/tier1_c10 data/tier1 \
        --hituav ../shared/data/hit-uav --person12 ../shared/data/uav123-person12 \
        --json reports/real/candidates/person_contrast.json

(`make data`'s tier1 is at the default contrast scale, 2.6, since 2026-11-27; the JSON was
written when data/tier1 was at 1 and the 2.6 set was data/tier1_c26.)

Synthetic sets are read at their frame 4 (first --clips clips); HIT-UAV per split (train: the
plates' split; val); person12 every 5th labelled frame.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import cv2
import numpy as np
from tqdm import tqdm

from emts.eval.track_eval import read_ground_truth
from emts.synth.plates import read_hituav
from emts.synth.store import ClipSet

COLUMNS = ("mean", "p90", "ring_std", "mean_over_ring_std", "height")


def person_stats(image: np.ndarray, box, others) -> tuple[float, float, float, float] | None:
    """(|box mean - ring median|, p90 |box - ring median|, ring std, box height) or None."""
    x, y, w, h = (float(v) for v in box)
    height, width = image.shape
    x0, y0, x1, y1 = round(x), round(y), round(x + w), round(y + h)
    if x0 < 0 or y0 < 0 or x1 > width or y1 > height or w < 3 or h < 3:
        return None
    m = max(w, h) * 0.5
    rx0, ry0 = max(int(x0 - m), 0), max(int(y0 - m), 0)
    rx1, ry1 = min(int(x1 + m), width), min(int(y1 + m), height)
    keep = np.ones((ry1 - ry0, rx1 - rx0), bool)
    for ox, oy, ow, oh in others:
        keep[
            max(int(oy) - ry0, 0) : max(int(oy + oh) - ry0, 0),
            max(int(ox) - rx0, 0) : max(int(ox + ow) - rx0, 0),
        ] = False
    ring = image[ry0:ry1, rx0:rx1][keep].astype(np.float64)
    if ring.size < 20:
        return None
    inner = image[y0:y1, x0:x1].astype(np.float64)
    ground = float(np.median(ring))
    return (
        abs(float(inner.mean()) - ground),
        float(np.percentile(np.abs(inner - ground), 90)),
        float(ring.std()),
        h,
    )


def from_clip_set(folder: str, clips: int) -> list[tuple]:
    clip_set = ClipSet(folder)
    rows = []
    for index in tqdm(clip_set.indices[:clips], desc=Path(folder).name, disable=None):
        clip = clip_set.load(index)
        labels = clip.labels["frames"][4]
        others = [p["box"] for p in labels["persons"]] + [d["box"] for d in labels["distractors"]]
        for person in labels["persons"]:
            if person["visible"] >= 0.9:
                rows.append(person_stats(clip.frames[4], person["box"], others))
    return [r for r in rows if r is not None]


def from_hituav(root: str, split: str) -> list[tuple]:
    rows = []
    for name, labelled in tqdm(read_hituav(root, split), desc=f"hit-uav {split}", disable=None):
        if not labelled["persons"]:
            continue
        image = cv2.imread(str(Path(root) / split / name), cv2.IMREAD_GRAYSCALE)
        others = labelled["persons"] + labelled["vehicles"]
        rows += [person_stats(image, box, others) for box in labelled["persons"]]
    return [r for r in rows if r is not None]


def from_person12(root: str) -> list[tuple]:
    labels = read_ground_truth(Path(root) / "groundtruth_rect.txt")
    rows = []
    for i in range(0, min(201, len(labels)), 5):  # JSON frame i = file i + 1 = label row i
        if np.isnan(labels[i]).any():
            continue
        image = cv2.imread(str(Path(root) / "frames" / f"{i + 1:06d}.jpg"), cv2.IMREAD_GRAYSCALE)
        rows.append(person_stats(image, labels[i], [labels[i]]))
    return [r for r in rows if r is not None]


def summarize(rows: list[tuple]) -> dict:
    table = np.array(rows, np.float64)
    columns = {
        "mean": table[:, 0],
        "p90": table[:, 1],
        "ring_std": table[:, 2],
        "mean_over_ring_std": table[:, 0] / np.maximum(table[:, 2], 1e-3),
        "height": table[:, 3],
    }
    return {"persons": len(rows)} | {
        name: [round(float(v), 2) for v in np.percentile(values, [10, 50, 90])]
        for name, values in columns.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="*", default=[], help="synthetic clip sets")
    parser.add_argument("--clips", type=int, default=150, help="clips read per set")
    parser.add_argument("--hituav", help="HIT-UAV folder (train and val are both read)")
    parser.add_argument("--person12", help="uav123-person12 folder")
    parser.add_argument("--json", help="write the table here")
    args = parser.parse_args()
    sources = {folder: from_clip_set(folder, args.clips) for folder in args.sets}
    if args.hituav:
        for split in ("train", "val"):
            sources[f"HIT-UAV {split}"] = from_hituav(args.hituav, split)
    if args.person12:
        sources["uav123-person12"] = from_person12(args.person12)
    report = {name: summarize(rows) for name, rows in sources.items() if rows}
    print(f"{'source':<28} {'n':>5}  " + "  ".join(f"{c} p10/p50/p90" for c in COLUMNS))
    for name, row in report.items():
        cells = "  ".join("/".join(f"{v:g}" for v in row[c]) for c in COLUMNS)
        print(f"{name:<28} {row['persons']:>5}  {cells}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
