"""Why `emts eval reacq` misses: its trials one by one, with every frame's mode and measurement.

Runs the loop of :func:`emts.eval.tracking.reacquisition` (the same clips, lock, blackouts and
success test, the shipped detector) and keeps, per trial, each frame's mode, measurement,
box centre and the distance from the target's centre to the nearest detection; prints the
misses by kind (re-locked but off the label's centre, still coasting, ...) and the success
rate at the real-clip scorer's radius, max(20 px, h/2), beside the paper's 20 px.

    python benchmarks/reacq_trials.py --bench data/bench --out /tmp/reacq_trials.json
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

from emts.cli.common import open_clip_set
from emts.errors import BadInputError
from emts.eval import tracking as R
from emts.stages.appearance import AppearanceView
from emts.stages.c_detect.detector import Detector
from emts.stages.d_track.tracker import TargetTracker


def trials(
    bench: str, detector: Detector, detector_mode: str = R.DEFAULT_DETECTOR_MODE
) -> list[dict]:
    """Each trial of ``emts eval reacq`` (its clips, lock, blackouts), frame by frame."""
    clip_set = R.ClipSet(bench)
    geometry = R.working_geometry(R.network_size_of(detector))
    rows = []
    for index in tqdm(clip_set.indices, desc="reacq trials", disable=None):
        clip = clip_set.load(index)
        labels = clip.labels["frames"]
        persons = [p for p in labels[R.LOCK_FRAME]["persons"] if p["visible"] >= 0.5]
        if not persons:
            continue
        target = max(persons, key=lambda p: p["box"][3])
        channels, motions = R._stages_ab(clip, detector)
        detections = R.clip_detections(detector, channels, motions, detector_mode)
        sighted = R.candidates_of(
            detections[R.LOCK_FRAME], geometry, detector.threshold, sightings=True
        )
        if not sighted:
            continue
        tap = R._centre(target["box"])
        start = min(sighted, key=lambda k: np.hypot(*(k.centre - tap)))
        if np.hypot(*(start.centre - tap)) > R.SUCCESS_RADIUS:
            continue
        if R.starts_on_another_person(start.centre, target, persons):
            continue
        for first, last in R.BLACKOUTS:
            check = last + R.CHECK_AFTER
            truth = {p["id"]: p for p in labels[check]["persons"]}
            if target["id"] not in truth or truth[target["id"]]["visible"] < 0.5:
                continue
            tracker = TargetTracker()
            tracker.lock(start, AppearanceView.of(clip.frames[R.LOCK_FRAME]))
            frames, reassociated, state = [], False, None
            for t in range(R.LOCK_FRAME + 1, check + 1):
                hidden = first <= t <= last
                seen = (
                    []
                    if hidden
                    else R.candidates_of(
                        detections[t], geometry, detector.threshold, sightings=True
                    )
                )
                view = None if hidden else AppearanceView.of(clip.frames[t])
                state = tracker.update(motions[t], seen, view=view)
                reassociated |= t > last and state.measured_by is not None
                now = {p["id"]: p for p in labels[t]["persons"]}
                nearest = None
                if target["id"] in now and seen:
                    centre = R._centre(now[target["id"]]["box"])
                    nearest = min(float(np.hypot(*(k.centre - centre))) for k in seen)
                frames.append(
                    {
                        "frame": t,
                        "mode": state.mode,
                        "measured_by": state.measured_by,
                        "centre": None
                        if state.centre is None
                        else [float(v) for v in state.centre],
                        "nearest_detection_px": nearest,
                    }
                )
            distance = (
                float(np.hypot(*(state.centre - R._centre(truth[target["id"]]["box"]))))
                if state.centre is not None
                else None
            )
            others = [
                float(np.hypot(*(state.centre - R._centre(p["box"]))))
                for pid, p in truth.items()
                if pid != target["id"] and state.centre is not None
            ]
            rows.append(
                {
                    "clip": int(index),
                    "blackout": [first, last],
                    "target_height_px": float(truth[target["id"]]["box"][3]),
                    "mode": state.mode,
                    "reassociated": bool(reassociated),
                    "distance_px": distance,
                    "nearest_other_px": min(others, default=None),
                    "frames": frames,
                }
            )
    return rows


def kind(row: dict, radius: float) -> str:
    """success / identity transfer / the kind of miss, the success radius ``radius`` px."""
    relocked = row["mode"] == "locked" and row["reassociated"]
    if relocked and row["distance_px"] <= radius:
        return "success"
    if relocked and row["nearest_other_px"] is not None and row["nearest_other_px"] <= radius:
        return "identity transfer"
    if relocked:
        return "miss: re-locked off the label's centre"
    return "miss: not re-locked (coasting)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", default="data/bench", help="the synthetic bench (make data)")
    parser.add_argument("--model", help="detector (default: the shipped one)")
    parser.add_argument("--out", type=Path, required=True, help="per-trial JSON")
    args = parser.parse_args(argv)
    try:
        open_clip_set(args.bench)
    except BadInputError as error:  # a missing or unreadable bench: one line
        print(f"reacq_trials.py: error: {error}", file=sys.stderr)
        return 2
    rows = trials(args.bench, Detector(args.model))
    summary = {}
    radii = {
        "20 px (the paper's)": lambda r: R.SUCCESS_RADIUS,
        "max(20 px, h/2) (the real-clip scorer's)": lambda r: max(
            R.SUCCESS_RADIUS, 0.5 * r["target_height_px"]
        ),
    }
    for name, radius in radii.items():
        counts = collections.Counter(kind(r, radius(r)) for r in rows)
        summary[name] = dict(counts)
        rate = counts["success"] / max(len(rows), 1)
        print(f"{name}: {counts['success']} / {len(rows)} = {rate:.1%}; {dict(counts)}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "trials": rows}, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
