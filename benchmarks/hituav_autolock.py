"""Auto-lock on real thermal stills: HIT-UAV val pseudo-clips through the thermal pipeline.

Every HIT-UAV val still with a person becomes a 60-frame pseudo-clip as in ``emts eval real``
(each person cut out, pasted onto the inpainted plate and walking 0.5-1.5 px a frame in a
random direction, the camera drifting), and the shipped pipeline runs it under auto-lock with
the thermal model (``emts track --lock auto --model thermal``). Counted: the clips it locks in
at all, and the frames it reports a lock (and a verified one) whose centre lies on a person
(their box grown by a quarter each side) and on none. Real persons and plates, synthetic
motion: what the auto-lock does with real thermal people, not with real thermal video.

    python benchmarks/hituav_autolock.py --hituav ../shared/data/hit-uav --seeds 0 --out DIR

Writes ``DIR/hituav_autolock.json`` and ``DIR/hituav_autolock.png``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

from emts.pipeline import Pipeline
from emts.synth.plates import read_hituav

sys.path.insert(0, str(Path(__file__).parent))
from group_taps import FRAMES, walking_clip  # noqa: E402
from pets_autolock import lock_bars  # noqa: E402

COUNTS = ("on_person", "on_nothing", "verified_on_person", "verified_on_nothing")


def on_a_person(centre: np.ndarray, boxes) -> bool:
    """Whether ``centre`` lies in one of ``boxes`` ([x, y, w, h]) grown by a quarter each side."""
    return any(
        x - 0.25 * w <= centre[0] <= x + 1.25 * w and y - 0.25 * h <= centre[1] <= y + 1.25 * h
        for x, y, w, h in boxes
    )


def auto_lock(clip) -> dict:
    """The shipped thermal pipeline under auto-lock over one pseudo-clip."""
    pipeline = Pipeline.default(model="thermal", auto_lock=True)
    counts = dict.fromkeys(COUNTS, 0)
    for t, frame in enumerate(clip.frames):
        result = pipeline.step(frame)
        if result.mode != "locked" or result.target is None:
            continue
        box = np.asarray(result.target.box, float)
        on = (
            "on_person"
            if on_a_person(box[:2] + box[2:] / 2, clip.person_boxes[t])
            else "on_nothing"
        )
        counts[on] += 1
        if result.verified:
            counts[f"verified_{on}"] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hituav", default="../shared/data/hit-uav", help="HIT-UAV folder")
    parser.add_argument("--seeds", default="0", help="pseudo-clip seeds, comma-separated")
    parser.add_argument("--out", required=True, help="report folder")
    args = parser.parse_args()
    root = Path(args.hituav)
    if not (root / "val").is_dir():
        raise SystemExit(f"{root}: no HIT-UAV val folder there (pass --hituav)")
    entries = [e for e in read_hituav(root, "val") if e[1]["persons"]]
    report = {
        "command": f"python benchmarks/hituav_autolock.py --hituav {args.hituav} "
        f"--seeds {args.seeds} --out {args.out}",
        "stills": len(entries),
        "frames_a_clip": FRAMES,
        "seeds": {},
    }
    for seed in (int(s) for s in args.seeds.split(",")):
        row = dict.fromkeys(COUNTS, 0) | {"frames": 0, "clips_locked": 0}
        for number, (name, entry) in enumerate(tqdm(entries, desc=f"seed {seed}", unit="clip")):
            clip = walking_clip(root, name, entry, np.random.default_rng([seed, number, 7]))
            counts = auto_lock(clip)
            for key in COUNTS:
                row[key] += counts[key]
            row["frames"] += len(clip.frames)
            row["clips_locked"] += counts["on_person"] + counts["on_nothing"] > 0
        report["seeds"][seed] = row
        print(f"seed {seed}: {row}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "hituav_autolock.json").write_text(json.dumps(report, indent=1) + "\n")
    seeds = list(report["seeds"])
    lock_bars(
        [f"seed {s}" for s in seeds],
        [report["seeds"][s] for s in seeds],
        "person",
        "HIT-UAV val pseudo-clips, thermal auto-lock",
        out / "hituav_autolock.png",
    )
    print(f"wrote {out / 'hituav_autolock.json'}, hituav_autolock.png")


if __name__ == "__main__":
    main()
