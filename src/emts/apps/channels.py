"""``emts channels``: Stages A and B over a source -- the ego-motion of every frame as JSON
lines and a video of the L, R, D channels; with a detector, the channels as that detector is
fed them beside its heatmap and detections (:func:`run_channels`)."""

from __future__ import annotations

import logging

import numpy as np
from tqdm import tqdm

from emts.config import ChannelConfig
from emts.errors import BadInputError
from emts.io import (
    JsonlWriter,
    UnreadableFrame,
    VideoWriter,
    no_usable_frames,
    open_source,
    signals_held,
)

log = logging.getLogger("emts")


def _motion_record(index: int, result) -> dict:
    matrix = result.motion_in_input() if index > 0 else np.eye(2, 3)
    homography = result.homography_in_input()
    return {
        "frame": index,
        "M": [[round(float(v), 6) for v in row] for row in matrix],
        "method": result.motion.method,
        "tracks": int(result.motion.tracks),
        "inlier_ratio": round(float(result.motion.inlier_ratio), 4),
        "H": None
        if homography is None
        else [[float(f"{v:.9g}") for v in row] for row in homography],
    }


class _ModelView:
    """What a detector is fed and what it finds, for ``emts channels --model``: Stage B as
    that model's input (its network size, Stage B warp and R span) after its residual-level
    normalization, the network's heatmap on the frame, and Stage C's detections as ``emts
    detect`` reports them (temporal scores, box fitting) at ``threshold``."""

    def __init__(self, model: str | None, front, threshold: float) -> None:
        from emts.apps.detect import build_stage_c
        from emts.stages.c_detect.boxfit import DEFAULT_BOX_FIT
        from emts.stages.c_detect.stage import DEFAULT_DETECTOR_MODE, DetectionStage

        self.front, self.threshold = front, threshold
        stage = build_stage_c(model, DEFAULT_DETECTOR_MODE, threshold=threshold)
        self.stage = DetectionStage(stage, DEFAULT_BOX_FIT, threshold)
        if self.stage.model is not None:
            self._feed()

    @property
    def detector(self):
        """The network Stage C runs (None before ``auto`` has picked one)."""
        return getattr(self.stage.model, "detector", self.stage.model)

    def _feed(self) -> None:
        """Stage B as the model's input (--no-ego stays: only the warp and R's span change)."""
        config = self.stage.channel_config()
        self.front.use_network_size(
            self.stage.network_size, config.warp_at, config.residual_baseline
        )

    def step(self, frame: np.ndarray):
        """(Stage A-B result, (channels as fed, heatmap, detections) or None before a model is
        picked, the variant ``auto`` picked on this frame or None)."""
        from emts.stages.b_channels import normalize_residual_level

        picked = None
        if self.stage.choose(frame):  # None while the frames are uniform
            self._feed()
            picked = self.stage.chosen
        result = self.front.step(frame)
        if self.stage.model is None:
            return result, None, picked
        detections = self.stage.step(result, frame).shown  # as emts detect reports them
        fed = normalize_residual_level(result.channels, self.detector.residual_reference)
        heat = self.detector.raw(result.channels)[0][0, 0]
        return result, (fed, heat, detections), picked

    def caption(self) -> str:
        d = self.detector
        if d is None:
            return "no detector yet (uniform frames)"
        span = f", R over {d.residual_baseline} frames" if d.residual_baseline > 1 else ""
        size = "x".join(map(str, d.network_size))
        return f"{d.path.name} {size}, warp {d.stage_b_warp}{span}, tau_s {self.threshold:g}"


def run_channels(
    source,
    out: str | None,
    jsonl: str | None,
    ego_compensation: bool = True,
    progress: bool = True,
    fps: float | None = None,
    model: str | None | bool = False,
    threshold: float = 0.3,
) -> int:
    """Stages A and B over ``source``; write the channel video and the ego-motion JSONL.

    ``model`` False: eq. 2's channels at the paper's 256x192 (no detector). Else a detector
    (``auto``, None = the default model, ``thermal`` or a file): the channels as that model
    is fed them, and the video shows its heatmap and detections beside them.

    An unreadable image in a folder is written as ``{"frame": i, "skipped": reason}`` (the
    frame numbers stay the files'); a frame of the wrong dtype or shape ends the run, and so
    does a source none of whose frames could be read (after their lines).

    Returns:
        The number of frames processed.
    """
    from emts.apps.draw import channel_panel, channels_figure
    from emts.front_end import MotionFrontEnd

    front = MotionFrontEnd(channel_config=ChannelConfig(ego_compensation=ego_compensation))
    view = None if model is False else _ModelView(model, front, threshold)
    frames, skipped, first_skip = 0, 0, None
    with open_source(source, fps=fps, placeholders=True) as frames_in:
        writer = VideoWriter(out, fps=frames_in.fps) if out else None
        records = JsonlWriter(jsonl) if jsonl else None
        try:
            bar = tqdm(
                frames_in,
                total=frames_in.length,
                desc="channels",
                unit="frame",
                disable=None if progress else True,
            )
            for index, frame in enumerate(bar):
                if isinstance(frame, UnreadableFrame):
                    log.warning("frame %d skipped: %s", index, frame.reason)
                    if records:
                        records.write({"frame": index, "skipped": frame.reason})
                    skipped += 1
                    first_skip = first_skip or f"frame {index}: {frame.reason}"
                    continue
                seen, picked = None, None
                try:
                    if view is None:
                        result = front.step(frame)
                    else:
                        result, seen, picked = view.step(frame)
                except BadInputError as error:
                    raise BadInputError(f"frame {index}: {error}") from None
                caption = f"frame {index}  {result.motion.method}  tracks {result.motion.tracks}"
                if not writer:
                    panel = None
                elif seen is None:
                    caption += f"  {view.caption()}" if view is not None else ""
                    panel = channel_panel(result.channels, caption)
                else:
                    panel = channels_figure(*seen, f"{caption}  {view.caption()}")
                record = _motion_record(index, result)
                if picked:  # --model auto has picked, on this frame (as emts detect says)
                    record["detector"] = picked
                with signals_held():  # an interrupt lands between frames, not between files
                    if writer:  # first: a full disk stops it before the frame's line
                        writer.write(panel)
                    if records:
                        records.write(record)
                frames += 1
        finally:
            if records:
                records.close()
            if writer:
                writer.close()
        if writer:
            writer.finish()  # an OSError if the video does not play
    if skipped and not frames:  # e.g. one unreadable image
        raise no_usable_frames(frames_in.description, skipped, first_skip)
    return frames
