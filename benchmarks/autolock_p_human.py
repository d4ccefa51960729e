"""Stage E's P(human) along the false locks of `emts eval autolock`'s person-free windows.

Replays the windows ``--windows`` (indices of `emts eval autolock`'s footage, seed 0, at the
curriculum's contrast) through the whole pipeline under auto-lock with the detector
``--model`` (a path, or ``thermal`` / ``default``) and prints, per window, how many frames a
verified lock held and the verifier's P(human) on them (min / median / max). Used on the
mirrored thermal candidate (reports/real/candidates/z_mirror, section 4): its longest false
locks, on a parked car and static blobs, were called human at 0.5-0.96. ~20 s a window.

    python benchmarks/autolock_p_human.py --model thermal --windows 6,34,38
"""

from __future__ import annotations

import argparse

import numpy as np

from emts.detector import Detector
from emts.eval.tracking import autolock_window
from emts.precision import named_model
from emts.verifier import Verifier


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="thermal", help="detector: a path, thermal or default")
    parser.add_argument("--windows", default="6,34,38", help="comma-separated window indices")
    parser.add_argument("--frames", type=int, default=300, help="frames a window (default 300)")
    args = parser.parse_args()
    windows = [int(w) for w in args.windows.split(",")]
    detector = Detector(None if args.model == "default" else named_model(args.model))
    verifier = Verifier()
    for index in windows:
        p_human = [
            float(pipeline.verification.p_human or 0.0)
            for _, _, result, _, pipeline in autolock_window(
                detector, verifier, index, frames=args.frames
            )
            if result.verified
        ]
        spread = "-"
        if p_human:
            spread = f"{min(p_human):.2f} / {np.median(p_human):.2f} / {max(p_human):.2f}"
        print(
            f"window {index}: verified frames {len(p_human)}, P(human) min / median / max {spread}"
        )


if __name__ == "__main__":
    main()
