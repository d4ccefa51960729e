"""Losses of §3.4.2: focal heatmap loss (eq. 4), masked L1 (size, offset), supervised
contrastive embedding loss (eq. 5) and their sum (eq. 6)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

SUPCON_TAU = 0.1  # eq. 5
WEIGHTS = {"heatmap": 1.0, "size": 0.1, "offset": 1.0, "embedding": 0.5}  # eq. 6


def focal_loss(logits: torch.Tensor, target: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Penalty-reduced focal loss (eq. 4), normalized by the number of positives."""
    pred = torch.sigmoid(logits).clamp(1e-4, 1 - 1e-4)
    positive = target.eq(1).float()
    negative = (1 - positive) * weight
    pos_loss = -((1 - pred) ** 2) * torch.log(pred) * positive
    neg_loss = -((1 - target) ** 4) * pred**2 * torch.log(1 - pred) * negative
    return (pos_loss.sum() + neg_loss.sum()) / positive.sum().clamp(min=1.0)


def gather(field: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    """(B, C, H, W) field at flat cell ``indices`` (B, K) -> (B, K, C)."""
    b, c = field.shape[:2]
    flat = field.view(b, c, -1).permute(0, 2, 1)
    return flat.gather(1, indices.unsqueeze(-1).expand(-1, -1, c))


def masked_l1(pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    m = mask.unsqueeze(-1)
    return (F.l1_loss(pred * m, target * m, reduction="sum")) / (m.sum() * pred.shape[-1]).clamp(
        min=1.0
    )


def supcon_loss(
    embeddings: torch.Tensor, labels: torch.Tensor, tau: float = SUPCON_TAU
) -> torch.Tensor:
    """Supervised contrastive loss (eq. 5) over L2-normalized embeddings (N, D), labels (N,).

    Averaged over anchors that have at least one positive; zero if none has.
    """
    if embeddings.shape[0] < 2:
        return embeddings.sum() * 0.0
    z = F.normalize(embeddings, dim=1)
    logits = z @ z.t() / tau
    n = z.shape[0]
    self_mask = torch.eye(n, dtype=torch.bool, device=z.device)
    logits = logits.masked_fill(self_mask, float("-inf"))
    log_prob = logits - torch.logsumexp(logits, dim=1, keepdim=True)
    positives = (labels[:, None] == labels[None, :]) & ~self_mask
    counts = positives.sum(1)
    anchors = counts > 0
    if not anchors.any():
        return embeddings.sum() * 0.0
    per_anchor = -(log_prob.masked_fill(~positives, 0.0).sum(1)[anchors]) / counts[anchors]
    return per_anchor.mean()


def detector_loss(
    outputs, batch, weights: dict[str, float] | None = None
) -> tuple[torch.Tensor, dict[str, float]]:
    """Total loss (eq. 6; ``weights`` replace WEIGHTS' entries) and its unweighted parts for a
    batch of targets (see train.data)."""
    weights = {**WEIGHTS, **(weights or {})}
    heat, size, offset, embedding = outputs
    parts = {
        "heatmap": focal_loss(heat, batch["heatmap"], batch["weight"]),
        "size": masked_l1(gather(size, batch["indices"]), batch["log_size"], batch["mask"]),
        "offset": masked_l1(gather(offset, batch["indices"]), batch["offset"], batch["mask"]),
    }
    emb = gather(embedding, batch["indices"])  # (B, K, D)
    keep = batch["mask"] > 0
    parts["embedding"] = supcon_loss(emb[keep], batch["identity"][keep])
    total = sum(weights[k] * v for k, v in parts.items())
    return total, {k: float(v.detach()) for k, v in parts.items()}
