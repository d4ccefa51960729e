"""Fine-tune the shipped default detector 1,500 steps on the Tier-1 and negative clips under
--data (default: `make data`'s `data/`) plus HIT-UAV Tier-2 stills (candidate O's control
recipe); --rgb keeps the colour-like (procedural) plates only (candidate O). Candidate Q
(`../q_drone_shadow/`) runs it once with --data pointing at sets generated with its patch
applied, once without."""

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

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--rgb", action="store_true")
p.add_argument("--seed", type=int, default=0)
p.add_argument("--steps", type=int, default=1500)
p.add_argument("--data", default="data")
a = p.parse_args()
out = Path(a.out)
out.mkdir(parents=True, exist_ok=True)
mixture = (
    {"tier1": 0.6, "negative": 0.4} if a.rgb else {"tier1": 0.5, "negative": 0.3, "tier2": 0.2}
)
cfg = AdaptConfig(steps=a.steps, mixture=mixture, seed=a.seed)
torch.set_num_threads(2)
torch.manual_seed(a.seed)
cv2.setNumThreads(1)
size = (256, 192)


def clips(folder, kind):
    s = StoredClips(folder, kind, network_size=size)
    if a.rgb:
        keep = [i for i, lab in enumerate(s.labels) if not lab["plate"].startswith("hituav")]
        s.light = [s.light[i] for i in keep]
        s.difference = [s.difference[i] for i in keep]
        s.labels = [s.labels[i] for i in keep]
    print(folder, len(s))
    return s


sources = {
    "tier1": clips(f"{a.data}/tier1", "tier1"),
    "negative": clips(f"{a.data}/negatives", "negative"),
}
if not a.rgb:
    sources["tier2"] = Tier2Stills("../shared/data/hit-uav", network_size=size)
model = detector_from_onnx(default_model_path()).to(memory_format=torch.channels_last)
opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
start = time.perf_counter()
state = loop.run_phases(
    model, opt, sources, [("finetune", cfg.steps, cfg.mixture)], cfg.training(), out, freeze_bn=True
)
model.eval()
export_onnx(model, out / "model.onnx", any_size=True)
print("seconds", round(time.perf_counter() - start), "final", state["history"][-1])
