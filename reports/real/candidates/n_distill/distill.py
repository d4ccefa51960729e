"""Candidate N (experiment): the shipped detector fine-tuned 1,500 steps on the curriculum with
(--teacher E.onnx) or without the ensemble's averaged heatmap as a soft target."""
import argparse, sys, time
from pathlib import Path
import cv2, numpy as np, torch, torch.nn.functional as F
from tqdm import tqdm
import emts.train.loop as loop
from emts.train.adapt import AdaptConfig
from emts.train.data import StoredClips, Tier2Stills
from emts.train.export import detector_from_onnx, export_onnx
from emts.stages.c_detect.detector import default_model_path, load_session
p = argparse.ArgumentParser(); p.add_argument('--out', required=True); p.add_argument('--teacher'); p.add_argument('--weight', type=float, default=1.0); p.add_argument('--steps', type=int, default=1500)
a = p.parse_args()
out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
cfg = AdaptConfig(steps=a.steps, mixture={"tier1": 0.5, "negative": 0.3, "tier2": 0.2})
torch.set_num_threads(2); torch.manual_seed(0); cv2.setNumThreads(1)
size = (256, 192)
sources = {"tier1": StoredClips("data/tier1", "tier1", progress=tqdm, network_size=size),
           "negative": StoredClips("data/negatives", "negative", progress=tqdm, network_size=size),
           "tier2": Tier2Stills("../shared/data/hit-uav", network_size=size)}
model = detector_from_onnx(default_model_path()).to(memory_format=torch.channels_last)
opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
teacher = load_session(Path(a.teacher), "detector", 1) if a.teacher else None
original = loop.detector_loss
def with_teacher(outputs, batch, weights=None):
    total, parts = original(outputs, batch, weights)
    if teacher is None:
        return total, parts
    x = batch["x"].detach().contiguous().cpu().numpy().astype(np.float32)
    t = teacher.run(None, {teacher.get_inputs()[0].name: x})[0]
    target = torch.from_numpy(t).clamp(1e-4, 1 - 1e-4)
    logits = outputs[0]
    # soft BCE over every cell, normalized like the focal loss (by the number of positives)
    bce = F.binary_cross_entropy_with_logits(logits, target, reduction="none") - F.binary_cross_entropy(target, target, reduction="none")
    distill = (bce * batch["weight"].clamp(max=1.0)).sum() / batch["heatmap"].eq(1).float().sum().clamp(min=1.0)
    parts["distill"] = float(distill.detach())
    return total + a.weight * distill, parts
loop.detector_loss = with_teacher
start = time.perf_counter()
state = loop.run_phases(model, opt, sources, [("distill", cfg.steps, cfg.mixture)], cfg.training(), out, freeze_bn=True)
model.eval()
export_onnx(model, out / "model.onnx", any_size=True)
print("seconds", round(time.perf_counter() - start), "final", state["history"][-1])
