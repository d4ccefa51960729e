"""``emts detect``: Stages A-C over a source, one JSON line of detections per frame.

:func:`build_stage_c` makes Stage C from a user's choices (the shipped models, picked by the
frames or named, or a model file); :func:`run_detect` streams a source through Stages A-C and
writes what Stage C finds, in the input's pixels.
"""

from __future__ import annotations

import logging

import numpy as np
from tqdm import tqdm

from emts.config import BoxFitConfig, ChannelConfig
from emts.errors import BadInputError
from emts.front_end import MotionFrontEnd
from emts.geometry import Frame
from emts.io import JsonlWriter, UnreadableFrame, no_usable_frames, open_source
from emts.litert import DEFAULT_BACKEND
from emts.modality import AUTO, DetectorChoice
from emts.stages.c_detect.stage import DetectionStage, DetectorMode

log = logging.getLogger("emts")


def build_stage_c(
    model: str | None,
    detector_mode: str,
    *,
    precision: str | None = None,
    backend: str | None = None,
    threads: int = 2,
    threshold: float | None = None,
    network_size: tuple[int, int] | None = None,
    coarse_pass: bool = True,
    warp_at: str | None = None,
):
    """Stage C of a job run on a user's stream.

    Args:
        model: ``auto`` (a :class:`emts.modality.DetectorChoice`: the shipped model picked by
            the first frame with content), None (the default model), ``thermal`` or a file.
        detector_mode: one of :data:`emts.stages.c_detect.stage.DETECTOR_MODES`.
        precision: the shipped models' precision (None: the default); not for a file.
        backend: the shipped models' runtime (None: the default); not for a file.
        threads: the network's threads.
        threshold: detection score tau_s (None: the detector's default).
        network_size: (W, H) the network runs at (None: the model's own).
        coarse_pass: Stage C's coarse pass where the model has one.
        warp_at: Stage B's warp for every model (``ChannelConfig.warp_at``; None: each
            model's own); the model is fed the residual level that goes with it.
    """
    from emts.precision import DEFAULT_PRECISION, model_for
    from emts.stages.b_channels import default_reference_for
    from emts.stages.c_detect.detector import Detector
    from emts.stages.c_detect.stage import detector_stage, shipped_stage

    options = {"network_size": network_size}
    if warp_at is not None:  # every model on this warp, fed the level that goes with it
        options["residual_reference"] = default_reference_for(warp_at)
    if threshold is not None:
        options["threshold"] = threshold
    if model == AUTO:
        return shipped_stage(
            AUTO,
            detector_mode,
            precision or DEFAULT_PRECISION,
            threads,
            backend or DEFAULT_BACKEND,
            coarse_pass,
            **options,
        )
    model = model_for("detector", model, precision, threads, backend)
    detector = Detector(model, threads=threads, **options)
    check_run_size(detector)
    return detector_stage(detector, detector_mode, coarse_pass)


def check_run_size(detector) -> None:
    """Refuse a detector whose size -- fixed by its graph, or recorded by ``emts export
    --run-size`` -- Stages B and C cannot run at (:func:`emts.geometry.check_network_size`),
    in one line that names the model, before any frame is read."""
    from emts.geometry import check_network_size

    try:
        check_network_size(detector.network_size)
    except BadInputError as error:
        raise BadInputError(
            f"{detector.path.name} asks to run at an unusable {error}; re-export it with a "
            "usable size (emts export MODEL --out NEW.onnx --any-size --run-size 256x192)"
        ) from None


def run_detect(
    source: str | int,
    jsonl: str,
    stage: DetectorMode | DetectorChoice | None,
    threshold: float,
    box_fit: BoxFitConfig | None,
    channel_config: ChannelConfig | None = None,
    fps: float | None = None,
) -> None:
    """Stages A-C over ``source``; one JSON line a frame: ``{frame, detections: [{box: [x, y,
    w, h], score}]}`` in the input's pixels, plus ``detector`` on the frame where ``auto``
    picked its model.

    An unreadable image in a folder is written as ``{"frame": i, "skipped": reason}``; a frame
    of the wrong dtype or shape ends the run (:class:`emts.errors.BadInputError`), and so does
    a source none of whose frames could be read (after their lines).

    Args:
        source: what :func:`emts.io.open_source` opens.
        jsonl: the JSON lines file ('-': standard output).
        stage: Stage C from :func:`build_stage_c` (a DetectorChoice: picked by the frames).
        threshold: detection score tau_s.
        box_fit: the colour evidence (:mod:`emts.stages.c_detect.boxfit`), or None: boxes
            and scores as the network gives them.
        channel_config: Stage B's parameters for every model, or None: each model's own.
        fps: frame rate of an image folder or glob (a video keeps its own).
    """
    stage = DetectionStage(stage, box_fit, threshold)  # --model auto: chosen by the frames
    front = MotionFrontEnd(
        channel_config=stage.channel_config(channel_config), network_size=stage.network_size
    )
    frames_in = open_source(source, fps=fps, placeholders=True)
    skipped, first_skip, used = 0, None, 0
    with frames_in, JsonlWriter(jsonl) as records:
        bar = tqdm(frames_in, total=frames_in.length, desc="detect", unit="frame", disable=None)
        for index, frame in enumerate(bar):
            if isinstance(frame, UnreadableFrame):
                log.warning("frame %d skipped: %s", index, frame.reason)
                records.write({"frame": index, "skipped": frame.reason})
                skipped, first_skip = skipped + 1, first_skip or f"frame {index}: {frame.reason}"
                continue
            picked = None
            try:
                if stage.choose(frame):  # --model auto, on the first frame with content
                    config = stage.channel_config(channel_config)
                    front.use_network_size(
                        stage.network_size, config.warp_at, config.residual_baseline
                    )
                    picked = stage.chosen
                result = front.step(frame)
            except BadInputError as error:
                raise BadInputError(f"frame {index}: {error}") from None
            # the temporal mode also decodes this frame's sightings its memory scores lower,
            # and the peaks the colour evidence may lift: what passes is what emts track shows
            detections = stage.step(result, frame).shown
            boxes = result.geometry.boxes(
                np.array([d.box for d in detections]).reshape(-1, 4), Frame.NETWORK, Frame.INPUT
            )
            line = {
                "frame": index,
                "detections": [
                    {"box": [round(float(v), 2) for v in box], "score": round(d.score, 4)}
                    for box, d in zip(boxes, detections, strict=True)
                ],
            }
            if picked:  # --model auto has picked, on this frame (as emts track says)
                line["detector"] = picked
            records.write(line)
            used += 1
    if skipped and not used:  # e.g. one unreadable image
        raise no_usable_frames(frames_in.description, skipped, first_skip)
