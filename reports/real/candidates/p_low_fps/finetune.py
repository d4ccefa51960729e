"""Candidate P (experiment): the shipped default detector fine-tuned 1,500 steps on the
curriculum with part of its clips seen at a third of their frame rate (every 3rd frame: 10 fps,
the rate of UAV123's clips and of export-rule thermal cameras), against the same fine-tune at
30 fps only (candidate O's control).

    python reports/real/candidates/p_low_fps/finetune.py --out runs/ft_s3_s0 --seed 0
"""

import argparse
import time
from pathlib import Path

import cv2
import torch

import emts.train.loop as loop
from emts.stages.c_detect.detector import default_model_path
from emts.train.adapt import AdaptConfig
from emts.train.data import StoredClips, Tier2Stills
from emts.train.export import detector_from_onnx, export_onnx

STRIDE = 3  # 30 fps -> 10 fps

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--steps", type=int, default=1500)
parser.add_argument(
    "--share", type=float, default=0.5, help="share of Tier-1 / negative samples at 10 fps"
)
args = parser.parse_args()
out = Path(args.out)
out.mkdir(parents=True, exist_ok=True)
size = (256, 192)
share = args.share
mixture = {
    "tier1": 0.5 * (1 - share),
    "tier1_10fps": 0.5 * share,
    "negative": 0.3 * (1 - share),
    "negative_10fps": 0.3 * share,
    "tier2": 0.2,
}
cfg = AdaptConfig(steps=args.steps, mixture=mixture, seed=args.seed)
torch.set_num_threads(2)
torch.manual_seed(args.seed)
cv2.setNumThreads(1)
sources = {
    "tier1": StoredClips("data/tier1", "tier1", network_size=size),
    "tier1_10fps": StoredClips("data/tier1", "tier1", network_size=size, frame_stride=STRIDE),
    "negative": StoredClips("data/negatives", "negative", network_size=size),
    "negative_10fps": StoredClips(
        "data/negatives", "negative", network_size=size, frame_stride=STRIDE
    ),
    "tier2": Tier2Stills("../shared/data/hit-uav", network_size=size),
}
model = detector_from_onnx(default_model_path()).to(memory_format=torch.channels_last)
optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
start = time.perf_counter()
state = loop.run_phases(
    model,
    optimizer,
    sources,
    [("finetune", cfg.steps, cfg.mixture)],
    cfg.training(),
    out,
    freeze_bn=True,
)
model.eval()
export_onnx(model, out / "model.onnx", any_size=True)
print("seconds", round(time.perf_counter() - start), "final", state["history"][-1])
