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


@dataclass(frozen=True)
class TrackerConfig:
    """Stage D, §3.5 (eqs. 6-7)."""

    process_noise: float = 1.0  # §3.5: q; Q = diag(q, q, 4q, 4q, q/4, q/4)
    measurement_noise: tuple[float, float, float, float] = (4.0, 4.0, 9.0, 9.0)  # §3.5: R, px^2
    gate_mahalanobis: float = 9.21  # §3.5: chi^2 0.99, 2 DoF
    embedding_threshold: float = 0.5  # §3.5: tau_0 of the scale-aware gate (eq. 7)
    embedding_floor: float = 0.2  # eq. 7: lower bound of tau_e for a grown target
    scale_gate_ratio: float = 1.5  # eq. 7: tau_e relaxes once h > 1.5 h_lock
    association_embedding_weight: float = 4.0  # §3.5: choose min(gamma^2 - 4 s)
    slow_template_keep: float = 0.98  # §3.5: m <- norm(0.98 m + 0.02 e) on every accept
    fast_template_keep: float = 0.95  # §3.5: faster update on verifier-approved frames only
    lock_height_keep: float = 0.995  # §3.5: h_lock follows a slow EMA (minutes, not frames)
    reacquire_after_misses: int = 8  # §3.5: consecutive gate failures before reacquisition
    relock_similarity: float = 0.65  # §3.5: frozen-template similarity that re-locks
    relock_gate: float = 16.0  # §3.5: spatial re-lock gate gamma^2 ...
    relock_frames: int = 3  # ... held for 3 consecutive frames


@dataclass(frozen=True)
class VerifierConfig:
    """Stage E, §3.6."""

    roi_size: tuple[int, int] = (24, 48)  # §3.6: (w, h) the track ROI is resampled to
    grid: tuple[int, int] = (2, 4)  # §3.6: (columns, rows) head to legs
    orientation_bins: int = 4  # §3.6: magnitude-weighted orientation histogram per cell
    window: int = 16  # §3.6: frames per descriptor window (~one gait cycle)
    every: int = 8  # §3.7: classify every 8th frame per track
    roi_margin: float = 0.15  # ROI = box grown by this fraction on each side
    threshold: float = 0.5  # P(human) below this is a veto
    autolock_threshold: float = 0.35  # §6.7: auto-lock accepted at P(human) >= 0.35
