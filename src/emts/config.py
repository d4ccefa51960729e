"""Every default of the method in one place, each with the paper section it comes from.

Sizes are ``(width, height)`` in pixels, as OpenCV takes them.
"""

from __future__ import annotations

from dataclasses import dataclass

# §3.1: the system works on 640x512 frames; any input is letterboxed into this.
WORKING_SIZE = (640, 512)
# §3.2: Stage A runs on a 320x256 downsample.
STAGE_A_SIZE = (320, 256)
# §3.3/§3.4: Stage B and the detector run at 256x192 (stride 8 -> a 32x24 grid).
NETWORK_SIZE = (256, 192)
# §3.2 runs the phase-correlation fallback at 96x72. We use 160x128 by default (see
# EgoMotionConfig.phase_size): measured on low-texture and real scenes it halves the error of
# the recovered shift (mean 1.1-1.2 -> 0.5 working px) and runs faster (0.16 vs 0.24 ms),
# since 160x128 keeps the 5:4 aspect of the frame and has FFT-friendly sizes.
PAPER_PHASE_SIZE = (96, 72)
PHASE_SIZE = (160, 128)


@dataclass(frozen=True)
class EgoMotionConfig:
    """Stage A, §3.2 (eq. 1)."""

    max_corners: int = 120  # §3.2: up to 120 Shi-Tomasi corners
    corner_quality: float = 0.01  # Shi-Tomasi relative quality level
    corner_min_distance: float = 8.0  # px at 320x256; spreads corners over the frame
    corner_block_size: int = 3  # measured: sharper corners, lower registration error than 5-7
    lk_window: int = 11  # px at 320x256 (odd); measured: 11 beats 15-21 in error and time
    lk_levels: int = 3  # pyramid levels above the base: reach ~ window * 2**levels
    lk_iterations: int = 20
    lk_epsilon: float = 0.03
    ransac_threshold: float = 2.0  # §3.2: 2-pixel reprojection threshold (at 320x256)
    ransac_confidence: float = 0.995
    ransac_max_iters: int = 500
    refine_iters: int = 10  # Levenberg-Marquardt refinement on the inliers
    min_tracks: int = 15  # §3.2: fall back below 15 surviving tracks ...
    min_inlier_ratio: float = 0.4  # §3.2: ... or below an inlier ratio of 0.4
    phase_size: tuple[int, int] = PHASE_SIZE  # fallback resolution; PAPER_PHASE_SIZE = §3.2's
    phase_min_response: float = 0.08  # phase-correlation peak below this -> identity
    min_texture_std: float = 1.0  # gray levels; a flatter frame has no usable motion -> identity
    max_translation_fraction: float = 0.25  # a shift beyond this fraction of the frame is rejected


@dataclass(frozen=True)
class ChannelConfig:
    """Stage B, §3.3 (eq. 2)."""

    ego_compensation: bool = True  # False -> identity warp (the "w/o ego compensation" ablation)
    residual_blur: int = 5  # §3.3: G_5x5 Gaussian on |I_t - warped|
