"""Stage C micro-detector, training side (§3.4, Fig. 3, Table 2).

A stateless depthwise-separable encoder (stem, three stages), one top-down lateral fusion at
stride 8, and four 1x1 heads on the fused feature: heatmap (1), log-size (2), offset (2),
embedding (8). Per-row parameter counts match Table 2 (464, 1,496, 3,424, 12,984, 3,120, 533:
22,021 in all; the paper's printed total, 21,941, is an arithmetic slip).
"""

from __future__ import annotations

import math
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
    # Temporal shift (`eq:tsm`, `eq:causaltsm`; the ablation variant, not the deployed one):
    # "none" = stateless; "bidirectional" / "causal" = how a (B, T, C, H, W) clip is shifted
    # offline. Streaming (:meth:`MicroDetector.step`) is always the causal cached form.
    tsm: str = "none"
    tsm_fraction: float = 0.125  # fold f = floor(C * fraction) channels per direction


TSM_MODES = ("none", "bidirectional", "causal")

# Named architectures (issue 8 part 3: "resolution and capacity, chosen by measurement"; the
# paper's 22k model stays trainable and comparable). ``wide``: 1.5x the channels of every
# stage and of the stem, 46.5k parameters, 1.8x the MACs at 256x192.
DETECTOR_VARIANTS: dict[str, DetectorConfig] = {
    "paper": DetectorConfig(),
    "wide": DetectorConfig(stem=24, widths=(32, 64, 96)),
}


def temporal_shift(z: torch.Tensor, fold: int, mode: str) -> torch.Tensor:
    """Shift a (B, T, C, H, W) clip along T before a depthwise conv, zero-padded at the ends.

    ``bidirectional`` (`eq:tsm`): ``[z_{t-1}^{(1:f)}; z_{t+1}^{(f+1:2f)}; z_t^{(2f+1:C)}]``.
    ``causal`` (`eq:causaltsm`, offline): ``[z_{t-1}^{(1:2f)}; z_t^{(2f+1:C)}]``, i.e. the
    streaming form with a zero cache before the first frame.
    """
    if fold == 0 or mode == "none":
        return z
    zeros = torch.zeros_like(z[:, :1, : 2 * fold])
    if mode == "causal":
        past = torch.cat([zeros, z[:, :-1, : 2 * fold]], dim=1)
        return torch.cat([past, z[:, :, 2 * fold :]], dim=2)
    if mode != "bidirectional":
        raise ValueError(f"temporal shift mode {mode!r}: choose one of {TSM_MODES}")
    past = torch.cat([zeros[:, :, :fold], z[:, :-1, :fold]], dim=1)
    future = torch.cat([z[:, 1:, fold : 2 * fold], zeros[:, :, :fold]], dim=1)
    return torch.cat([past, future, z[:, :, 2 * fold :]], dim=2)


def causal_step(
    z: torch.Tensor, cache: torch.Tensor, fold: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """One streaming step of `eq:causaltsm` on (B, C, H, W): ``([c_{t-1}; z_t^{(2f+1:C)}],
    c_t = z_t^{(1:2f)})``."""
    if fold == 0:
        return z, cache
    return torch.cat([cache, z[:, 2 * fold :]], dim=1), z[:, : 2 * fold]


def _bn(channels: int) -> nn.BatchNorm2d:
    return nn.BatchNorm2d(channels)


class DepthwiseSeparable(nn.Sequential):
    """3x3 depthwise + BN + ReLU, then 1x1 pointwise + BN + ReLU."""

    def __init__(self, c_in: int, c_out: int, stride: int, fold: int = 0) -> None:
        super().__init__(
            nn.Conv2d(c_in, c_in, 3, stride, 1, groups=c_in, bias=False),
            _bn(c_in),
            nn.ReLU(inplace=True),
            nn.Conv2d(c_in, c_out, 1, bias=False),
            _bn(c_out),
            nn.ReLU(inplace=True),
        )
        # Channels shifted per direction before the depthwise conv (0: no shift). A plain
        # attribute, so that the stateless and TSM variants share one state dict.
        self.fold = fold


def _stage(c_in: int, c_out: int, blocks: int, fraction: float) -> nn.Sequential:
    def fold(c: int) -> int:
        return math.floor(c * fraction)

    layers = [DepthwiseSeparable(c_in, c_out, 2, fold(c_in))]
    layers += [DepthwiseSeparable(c_out, c_out, 1, fold(c_out)) for _ in range(blocks - 1)]
    return nn.Sequential(*layers)


class MicroDetector(nn.Module):
    """(B, C, 192, 256) channels -> heatmap logits, log-size, offset, embedding at (24, 32).

    Returns a tuple ``(heatmap_logits (B,1,24,32), log_size (B,2,24,32), offset (B,2,24,32),
    embedding (B,8,24,32))``. The heatmap is returned as logits (sigmoid is applied by the
    loss and by the exported graph); embeddings are *not* normalized here (the decoder does it).

    With ``config.tsm`` set, a (B, T, C, 192, 256) clip is shifted along T before every DWS
    block's depthwise conv (``config.tsm`` picks `eq:tsm` or the causal `eq:causaltsm`) and
    the heads come back flattened to (B*T, ...), frame-major per clip, like the training
    batches; :meth:`step` is the causal streaming form with its caches (`eq:statefn`).
    A 4-D input is always run without shift (each frame alone).
    """

    def __init__(self, config: DetectorConfig | None = None) -> None:
        super().__init__()
        self.config = c = config or DetectorConfig()
        if c.tsm not in TSM_MODES:
            raise ValueError(f"tsm {c.tsm!r}: choose one of {TSM_MODES}")
        fraction = c.tsm_fraction if c.tsm != "none" else 0.0
        s1, s2, s3 = c.widths
        self.stem = nn.Sequential(
            nn.Conv2d(c.in_channels, c.stem, 3, 2, 1, bias=False),
            _bn(c.stem),
            nn.ReLU(inplace=True),
        )
        self.stage1 = _stage(c.stem, s1, c.blocks[0], fraction)
        self.stage2 = _stage(s1, s2, c.blocks[1], fraction)
        self.stage3 = _stage(s2, s3, c.blocks[2], fraction)
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

    def blocks(self) -> list[DepthwiseSeparable]:
        """The DWS blocks in order (the seven shift sites)."""
        return [*self.stage1, *self.stage2, *self.stage3]

    def _trunk(self, x: torch.Tensor, shift) -> tuple[torch.Tensor, torch.Tensor]:
        """Stem and stages; ``shift(index, block, z)`` transforms each block's input."""
        x = self.stem(x)
        index = 0
        features = []
        for stage in (self.stage1, self.stage2, self.stage3):
            for block in stage:
                x = block(shift(index, block, x))
                index += 1
            features.append(x)
        return features[1], features[2]

    def _heads(self, c2: torch.Tensor, c3: torch.Tensor):
        fused = self.smooth(c2 + self.upsample(self.lateral(c3)))
        return self.heatmap(fused), self.size(fused), self.offset(fused), self.embedding(fused)

    def forward(
        self, x: torch.Tensor, mode: str | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Heads of a (B, C, H, W) frame batch, or of a (B, T, C, H, W) clip shifted by
        ``mode`` (default ``config.tsm``), flattened to (B*T, ...)."""
        if x.ndim == 4:
            return self._heads(*self._trunk(x, lambda i, b, z: z))
        mode = mode or self.config.tsm
        frames = x.shape[1]

        def shift(index: int, block: DepthwiseSeparable, z: torch.Tensor) -> torch.Tensor:
            if block.fold == 0 or mode == "none":
                return z
            clip = z.unflatten(0, (-1, frames))
            return temporal_shift(clip, block.fold, mode).flatten(0, 1)

        return self._heads(*self._trunk(x.flatten(0, 1), shift))

    def cache_shapes(self, height: int = 192, width: int = 256) -> list[tuple[int, int, int]]:
        """(2f, h, w) of each block's cache for one (C, height, width) frame."""
        shapes = []
        probe = torch.zeros(1, self.config.in_channels, height, width)

        def record(index, block, z):
            shapes.append((2 * block.fold, z.shape[2], z.shape[3]))
            return z

        with torch.no_grad():
            self._trunk(probe, record)
        return shapes

    def initial_caches(self, batch: int = 1, height: int = 192, width: int = 256):
        """Zero caches ``c_0`` (the stream's start) for :meth:`step`."""
        return [torch.zeros(batch, *shape) for shape in self.cache_shapes(height, width)]

    def step(self, x: torch.Tensor, caches: list[torch.Tensor]):
        """One streaming step (`eq:statefn`): ``(x_t, c_{t-1}) -> (heads, c_t)`` with the
        causal cached shift (`eq:causaltsm`) before every block. Returns
        ``(heatmap_logits, log_size, offset, embedding, new_caches)``."""
        new: list[torch.Tensor] = []

        def shift(index: int, block: DepthwiseSeparable, z: torch.Tensor) -> torch.Tensor:
            shifted, cache = causal_step(z, caches[index], block.fold)
            new.append(cache)
            return shifted

        heads = self._heads(*self._trunk(x, shift))
        return (*heads, new)

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
