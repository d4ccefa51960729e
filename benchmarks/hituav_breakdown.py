"""Who the detector misses on real thermal stills: HIT-UAV val by camera angle, altitude and
how close the nearest other person stands.

HIT-UAV's file names carry the flight altitude (60-130 m) and the camera's angle (30 degrees:
oblique ... 90: straight down), so the real suite's pooled AP can be split the way the field
sees it: oblique and straight-down views, low and high flights, people in groups and alone.
The frames are `emts eval real`'s HIT-UAV pseudo-clips (persons walking 0.5-1.5 px/frame at
640x512, camera drift; seeds pooled); the detectors are what the pipeline runs by default on
them (`--model auto`: the thermal model at 512x384, temporal scores, its coarse pass) and the
classical compensated-difference baseline at its best threshold on this set (k = 4).

``--peaks square`` runs Stage C's decoder with CenterNet's 3x3 peaks alone, as before
2026-11-29 (no second person in a diagonally adjacent cell;
``emts.stages.c_detect.detector.PEAK_KERNEL``).

    python benchmarks/hituav_breakdown.py --hituav ../shared/data/hit-uav --out DIR
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np

from emts.eval.metrics import ImageResult
from emts.eval.real import auto_detector, run_dataset
from emts.eval.real_frames import hituav_frames
from emts.eval.real_metrics import TAU_S, multi_person_metrics, recall_by_spacing
from emts.footage import CompensatedDifference
from emts.front_end import channel_key
from emts.synth.plates import read_hituav

CLASSICAL_K = 4.0
ANGLES = ((30, 40, "30-40 deg (oblique)"), (40, 60, "40-60 deg"), (60, 80, "60-80 deg"))
ANGLES += ((80, 91, "80-90 deg (straight down)"),)
ALTITUDES = ((60, 80, "60-70 m"), (80, 110, "80-100 m"), (110, 140, "110-130 m"))
SPACING_EDGES = (0.75, 1.5, 3.0)  # the nearest other person, in the person's heights
SPACING_LABELS = ("< 0.75 heights", "0.75-1.5", "1.5-3", ">= 3 or alone")


def _camera(name: str) -> tuple[int, int]:
    """(altitude m, camera angle deg) from a HIT-UAV file name ``T_ALT_ANGLE_..._N.jpg``."""
    parts = Path(name).stem.split("_")
    return int(parts[1]), int(parts[2])


def _group(results: list[ImageResult]) -> dict:
    if not results:  # no still of this view (a subset run: --images)
        return {"images": 0, "persons": 0, "AP@0.25": None, "AP@0.5": None}
    m = multi_person_metrics(results)
    keys = (
        "images",
        "persons",
        "AP@0.25",
        "AP@0.5",
        f"recall@{TAU_S:g}",
        f"fp_per_image@{TAU_S:g}",
    )
    return {key: m[key] for key in keys}


def breakdown(names: list[str], results: dict[str, list[ImageResult]]) -> dict:
    cameras = [_camera(n) for n in names]
    out = {}
    for detector, rows in results.items():
        section = {"all": _group(rows), "camera angle": {}, "altitude": {}}
        for lo, hi, label in ANGLES:
            pick = [r for r, (_, a) in zip(rows, cameras, strict=True) if lo <= a < hi]
            section["camera angle"][label] = _group(pick)
        for lo, hi, label in ALTITUDES:
            pick = [r for r, (h, _) in zip(rows, cameras, strict=True) if lo <= h < hi]
            section["altitude"][label] = _group(pick)
        section["recall by the nearest other person's distance"] = recall_by_spacing(
            rows, edges=SPACING_EDGES, labels=SPACING_LABELS
        )
        out[detector] = section
    return out


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("camera angle", "AP@0.25"), ("altitude", "AP@0.25")]
    panels.append(("recall by the nearest other person's distance", "recall"))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    detectors = list(report["detectors"])
    width = 0.8 / len(detectors)
    for ax, (key, metric) in zip(axes, panels, strict=True):
        labels = list(report["detectors"][detectors[0]][key])
        for k, detector in enumerate(detectors):
            rows = report["detectors"][detector][key]
            values = [rows[label][metric] or 0 for label in labels]
            x = np.arange(len(labels)) + (k - (len(detectors) - 1) / 2) * width
            ax.bar(x, values, width, label=detector)
            for xi, v in zip(x, values, strict=True):
                ax.text(xi, v + 0.01, f"{v:.2f}", ha="center", fontsize=7)
        ax.set_xticks(np.arange(len(labels)), labels, rotation=15, fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{metric} by {key.replace('recall by ', '')}", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8, loc="lower left")
    fig.suptitle(report["title"], fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hituav", required=True, help="HIT-UAV root (val.json, val/)")
    parser.add_argument("--out", required=True, help="folder for breakdown.json / .png")
    parser.add_argument("--variant", choices=("persons", "vehicles"), default="persons")
    parser.add_argument("--seeds", type=int, default=3, help="pseudo-clip seeds pooled (3)")
    parser.add_argument("--images", type=int, default=None, help="first N stills only")
    parser.add_argument("--peaks", choices=("default", "square"), default="default")
    args = parser.parse_args(argv)
    root, out = Path(args.hituav), Path(args.out)
    if not (root / "val.json").is_file():
        print(f"error: {root / 'val.json'} not found (pass the HIT-UAV root)", file=sys.stderr)
        return 2
    if args.seeds < 1:
        print("error: --seeds must be at least 1", file=sys.stderr)
        return 2
    if args.peaks == "square":
        import emts.stages.c_detect.detector

        emts.stages.c_detect.detector.PEAK_KERNEL = np.ones((3, 3), np.uint8)
    out.mkdir(parents=True, exist_ok=True)
    entries = read_hituav(root, "val")[: args.images]
    auto = auto_detector(root / "val" / entries[0][0])
    frames = itertools.chain.from_iterable(
        hituav_frames(root, "val", args.variant, s, args.images, [channel_key(auto[1])])
        for s in range(args.seeds)
    )
    run = run_dataset(
        frames,
        {},
        f"hituav {args.variant}",
        total=len(entries) * args.seeds,
        classical=CompensatedDifference((CLASSICAL_K,)),
        auto=auto,
    )
    names = [f.name for f in run.frames]
    results = {
        name: [
            ImageResult(f.gt, np.zeros(len(f.gt), bool), boxes, scores)
            for f, (boxes, scores) in zip(run.frames, run.detections[name], strict=True)
        ]
        for name in run.detections
    }
    pooled = f"{len(entries)} stills x seeds 0-{args.seeds - 1}"
    report = {
        "title": f"HIT-UAV val ({pooled}), {args.variant} moving; peaks: {args.peaks}",
        "command": "python benchmarks/hituav_breakdown.py " + " ".join(argv or sys.argv[1:]),
        "detectors": breakdown(names, results),
    }
    (out / "breakdown.json").write_text(json.dumps(report, indent=1) + "\n")
    plot(report, out / "breakdown.png")
    for detector, section in report["detectors"].items():
        print(f"{detector}: all {section['all']}")
        for key in ("camera angle", "altitude"):
            for label, row in section[key].items():
                print(f"  {key} {label}: AP@0.25 {row['AP@0.25']}  recall {row.get('recall@0.3')}")
        for label, row in section["recall by the nearest other person's distance"].items():
            print(f"  nearest other person {label}: {row}")
    print(f"wrote {out / 'breakdown.json'}, breakdown.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
