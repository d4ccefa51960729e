"""Stage E's P(human) along the false locks of `emts eval autolock`'s person-free windows.

Replays the windows ``--windows`` (indices of `emts eval autolock`'s footage, seed 0, at the
curriculum's contrast) through the whole pipeline under auto-lock with the detector
``--model`` (a path, or ``thermal`` / ``default``) and prints, per window, how many frames a
verified lock held and the verifier's P(human) on them (min / median / max); beside it the
same windows of descriptors with each ROI pair registered by the camera motion the clip was
rendered with instead of Stage A's estimate (is a static target called human because the
registration leaves flow on it?), and the ground the track covered over each classified
window (:meth:`emts.stages.e_verify.VerificationSchedule.travel_now`, in its heights). Used on the
mirrored thermal candidate (reports/real/candidates/z_mirror, sections 4-5): its longest false
locks, on a parked car and static blobs, were called human at 0.5-0.96 with either motion, and
had moved 0.005-0.03 of their height. ~20 s a window.

    python benchmarks/autolock_p_human.py --model thermal --windows 6,34,38 [--travel-rule on]
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np

from emts.config import AcquisitionConfig
from emts.eval.tracking import autolock_window
from emts.precision import named_model
from emts.stages.c_detect.detector import Detector
from emts.stages.e_verify import Verifier


class _Registered(Verifier):
    """The shipped verifier, keeping beside its window one of the same ROI pairs registered by
    the clip's rendered camera motion (:meth:`register`, called after each step)."""

    def reset(self) -> None:
        super().reset()
        self.true_window: list[np.ndarray] = []
        self.seen = None

    def observe(self, view, box) -> None:
        super().observe(view, box)
        self.seen = (view, box)

    def register(self, truth: np.ndarray) -> None:
        """Describe this step's ROI pair again with ``truth`` (frame t-1 -> t) as the motion."""
        if self.seen is None or self.seen[0].previous is None:
            return
        view, box = self.seen
        descriptor = self.describe(replace(view, motion=truth), box)  # as observe cuts it
        self.true_window = [*self.true_window, descriptor][-self.config.window :]
        self.seen = None

    def true_probability(self) -> float | None:
        if len(self.true_window) < self.config.window:
            return None
        return float(self.classify(np.stack(self.true_window, axis=1)[None])[0])


def _spread(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{min(values):.2f} / {np.median(values):.2f} / {max(values):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="thermal", help="detector: a path, thermal or default")
    parser.add_argument("--windows", default="6,34,38", help="comma-separated window indices")
    parser.add_argument("--frames", type=int, default=300, help="frames a window (default 300)")
    parser.add_argument(
        "--travel-rule",
        choices=["off", "on"],
        default="off",
        help="the auto-lock's walk requirement (AcquisitionConfig.autolock_min_travel): off "
        "(default) shows what the verifier alone lets through; on: as shipped",
    )
    args = parser.parse_args()
    windows = [int(w) for w in args.windows.split(",")]
    detector = Detector(None if args.model == "default" else named_model(args.model))
    verifier = _Registered()
    config = AcquisitionConfig(autolock_min_travel=None) if args.travel_rule == "off" else None
    for index in windows:
        p_human, p_true, travel = [], [], []
        for _, labels, result, _, pipeline in autolock_window(
            detector, verifier, index, frames=args.frames, acquisition_config=config
        ):
            verifier.register(np.array(labels["camera_motion"], np.float64))
            if pipeline.verification.classified is not None:
                travel.append(pipeline.verification.travel)
            if result.verified:
                p_human.append(float(pipeline.verification.p_human or 0.0))
                true = verifier.true_probability()
                if true is not None:
                    p_true.append(true)
        print(
            f"window {index}: verified frames {len(p_human)}, P(human) min / median / max "
            f"{_spread(p_human)}; the pairs registered by the true motion {_spread(p_true)}; "
            f"ground covered at its classifications (heights) "
            f"{_spread([t for t in travel if t is not None])}"
        )


if __name__ == "__main__":
    main()
