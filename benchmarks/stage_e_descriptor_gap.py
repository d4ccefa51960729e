"""How do a real walker's Stage E descriptors differ from the curriculum's? (diagnosis)

Compares the working-resolution descriptor windows of a labelled real clip (the person and the
static ground beside them, as ``emts eval verifier`` builds them) with the held-out synthetic
windows of ``emts train verifier`` (its cache; run that first): per 2x4 cell (rows head to
legs, two columns), the median over windows of the mean flow magnitude, of its temporal std,
and of the share of the dominant orientation bin. Prints a table; writes nothing.

``--stride 3`` reads every third frame of the synthetic clips (a 10-fps camera, as the real
clip's; needs sets made with ``emts synth ... --frames 52``, e.g. data/bench52 and
data/fpbench52): compare a 10-fps clip with 10-fps synthetic windows.

Usage: python benchmarks/stage_e_descriptor_gap.py CLIP GT FPS [--sets DIR ...] [--stride K]
  e.g. D=../shared/data/uav123-person12
       python benchmarks/stage_e_descriptor_gap.py $D/frames $D/groundtruth_rect.txt 10 \
           --sets data/bench52 data/fpbench52 --stride 3
"""

import argparse

import numpy as np

from emts.config import VerifierConfig
from emts.eval.track_eval import read_ground_truth
from emts.eval.verifier_real import VerifierRealConfig, _collect
from emts.stages.c_detect.detector import Detector
from emts.train.verifier import cached_windows

CELLS = 8  # 4 rows (head to legs) x 2 columns
MAGNITUDE = np.arange(0, 40, 5)  # each cell: magnitude, then 4 orientation bins


def cell_stats(x: np.ndarray) -> dict[str, np.ndarray]:
    magnitude = x[:, MAGNITUDE, :]
    bins = x.reshape(len(x), CELLS, 5, -1)[:, :, 1:, :].sum(axis=3)
    share = bins / (bins.sum(axis=2, keepdims=True) + 1e-9)
    return {
        "mean magnitude": np.median(magnitude.mean(axis=2), axis=0),
        "temporal std": np.median(magnitude.std(axis=2), axis=0),
        "dominant bin share": np.median(share.max(axis=2), axis=0),
    }


def main(clip: str, gt: str, fps: float, sets: list[str], stride: int) -> None:
    truth = read_ground_truth(gt)
    config = VerifierRealConfig(fps=fps, last=len(truth) - 1)
    windows, _ = _collect(clip, truth, config, VerifierConfig(), ["working"])
    real = {
        kind: np.stack([d[0] for k, _, d in windows if k == kind]) for kind in ("person", "ground")
    }
    held = cached_windows(
        sets,
        Detector(None, threshold=0.3),
        1,
        "runs/verifier-windows",
        None,
        "working",
        stride=stride,
    )
    kinds = np.array(held.kind)
    synthetic = {"person": held.x[kinds == "person"], "ground": held.x[kinds == "ground"]}
    for kind in ("person", "ground"):
        for name, x in (("real", real[kind]), ("synthetic", synthetic[kind])):
            for stat, values in cell_stats(x).items():
                cells = " ".join(f"{v:.2f}" for v in values)
                print(f"{name:9s} {kind:6s} n={len(x):4d} {stat:18s} {cells}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("clip")
    parser.add_argument("gt")
    parser.add_argument("fps", type=float)
    parser.add_argument("--sets", nargs="+", default=["data/bench", "data/fpbench"])
    parser.add_argument("--stride", type=int, default=1, help="synthetic frames per window step")
    args = parser.parse_args()
    main(args.clip, args.gt, args.fps, args.sets, args.stride)
