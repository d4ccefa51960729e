"""Stage C micro-detector, training side (§3.4, Fig. 3, Table 2).

A stateless depthwise-separable encoder (stem, three stages), one top-down lateral fusion at
stride 8, and four 1x1 heads on the fused feature: heatmap (1), log-size (2), offset (2),
embedding (8). Per-row parameter counts match Table 2 (464, 1,496, 3,424, 12,984, 3,120, 533:
22,021 in all; the paper's printed total, 21,941, is an arithmetic slip).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

HEATMAP_PRIOR = 0.1  # initial heatmap probability (CenterNet's -2.19 bias)


@dataclass(frozen=True)
class DetectorConfig:
    """Architecture switches (§3.4; ablations of §6)."""

    in_channels: int = 3  # 3 = [L, R, D]; 1 = luminance only (ablation)
    stem: int = 16
    widths: tuple[int, int, int] = (24, 40, 64)  # S1, S2, S3 outputs
    blocks: tuple[int, int, int] = (2, 2, 3)  # DWS blocks per stage
    embedding_dim: int = 8


def _bn(channels: int) -> nn.BatchNorm2d:
    return nn.BatchNorm2d(channels)


class DepthwiseSeparable(nn.Sequential):
    """3x3 depthwise + BN + ReLU, then 1x1 pointwise + BN + ReLU."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__(
            nn.Conv2d(c_in, c_in, 3, stride, 1, groups=c_in, bias=False),
            _bn(c_in),
            nn.ReLU(inplace=True),
            nn.Conv2d(c_in, c_out, 1, bias=False),
            _bn(c_out),
            nn.ReLU(inplace=True),
        )


def _stage(c_in: int, c_out: int, blocks: int) -> nn.Sequential:
    layers = [DepthwiseSeparable(c_in, c_out, 2)]
    layers += [DepthwiseSeparable(c_out, c_out, 1) for _ in range(blocks - 1)]
    return nn.Sequential(*layers)


class MicroDetector(nn.Module):
    """(B, C, 192, 256) channels -> heatmap logits, log-size, offset, embedding at (24, 32).

    Returns a tuple ``(heatmap_logits (B,1,24,32), log_size (B,2,24,32), offset (B,2,24,32),
    embedding (B,8,24,32))``. The heatmap is returned as logits (sigmoid is applied by the
    loss and by the exported graph); embeddings are *not* normalized here (the decoder does it).
    """

    def __init__(self, config: DetectorConfig | None = None) -> None:
        super().__init__()
        self.config = c = config or DetectorConfig()
        s1, s2, s3 = c.widths
        self.stem = nn.Sequential(
            nn.Conv2d(c.in_channels, c.stem, 3, 2, 1, bias=False),
            _bn(c.stem),
            nn.ReLU(inplace=True),
        )
        self.stage1 = _stage(c.stem, s1, c.blocks[0])
        self.stage2 = _stage(s1, s2, c.blocks[1])
        self.stage3 = _stage(s2, s3, c.blocks[2])
        # Neck: 1x1 lateral from S3, 2x upsample, add to S2, depthwise 3x3 smoothing.
        self.lateral = nn.Sequential(nn.Conv2d(s3, s2, 1), _bn(s2))
        self.upsample = nn.Upsample(scale_factor=2, mode="nearest")
        self.smooth = nn.Sequential(
            nn.Conv2d(s2, s2, 3, 1, 1, groups=s2, bias=False), _bn(s2), nn.ReLU(inplace=True)
        )
        self.heatmap = nn.Conv2d(s2, 1, 1)
        self.size = nn.Conv2d(s2, 2, 1)
        self.offset = nn.Conv2d(s2, 2, 1)
        self.embedding = nn.Conv2d(s2, c.embedding_dim, 1)
        nn.init.constant_(self.heatmap.bias, float(torch.logit(torch.tensor(HEATMAP_PRIOR))))

    def forward(
        self, x: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        x = self.stem(x)
        x = self.stage1(x)
        c2 = self.stage2(x)
        c3 = self.stage3(c2)
        fused = self.smooth(c2 + self.upsample(self.lateral(c3)))
        return self.heatmap(fused), self.size(fused), self.offset(fused), self.embedding(fused)

    def parameter_rows(self) -> dict[str, int]:
        """Parameter count per row of Table 2."""

        def count(*modules: nn.Module) -> int:
            return sum(p.numel() for m in modules for p in m.parameters())

        return {
            "stem": count(self.stem),
            "S1": count(self.stage1),
            "S2": count(self.stage2),
            "S3": count(self.stage3),
            "neck": count(self.lateral, self.smooth),
            "heads": count(self.heatmap, self.size, self.offset, self.embedding),
        }


def count_macs(model: nn.Module, input_shape: tuple[int, ...] = (1, 3, 192, 256)) -> dict[str, int]:
    """Multiply-accumulates of convolutions and linear layers, counted with forward hooks.

    Returns ``{"total": n, <module name>: n, ...}`` (BN, ReLU, add and upsample are not MACs).
    """
    macs: dict[str, int] = {}
    hooks = []
    for name, module in model.named_modules():
        if isinstance(module, nn.Conv2d):

            def conv_hook(mod, inputs, output, name=name):
                kernel = mod.kernel_size[0] * mod.kernel_size[1] * (mod.in_channels // mod.groups)
                macs[name] = int(output.numel() // output.shape[0] * kernel)

            hooks.append(module.register_forward_hook(conv_hook))
        elif isinstance(module, nn.Linear):

            def linear_hook(mod, inputs, output, name=name):
                macs[name] = int(output.numel() // output.shape[0] * mod.in_features)

            hooks.append(module.register_forward_hook(linear_hook))
    was_training = model.training
    model.eval()
    with torch.no_grad():
        model(torch.zeros(input_shape))
    model.train(was_training)
    for hook in hooks:
        hook.remove()
    return {"total": sum(macs.values()), **macs}
