"""What the ``emts`` commands share: argparse types with one-line errors, the options of
every command that runs the network on a stream (``--model``, ``--precision``, ``--backend``,
``--threads``, ``--threshold``, ``--fps``, ``--detector-mode``, ``--network-size``,
``--coarse-pass``, ``--stage-b``) and Stage C built from them, and the checks the training and
evaluation commands make first."""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

from emts.config import ChannelConfig
from emts.errors import BadInputError
from emts.io import MAX_FPS, MIN_FPS
from emts.litert import BACKENDS, DEFAULT_BACKEND
from emts.modality import AUTO, DEFAULT
from emts.precision import DEFAULT_PRECISION, PRECISIONS, named_model

MODEL_HELP = (
    "ONNX detector, or thermal: the thermal camera model, which runs at 512x384 (default: the "
    "shipped model)"
)
INPUT_MODEL_HELP = (
    "detector: auto = picked from the first frame with content -- the thermal camera model "
    "(runs at 512x384) for frames without colour (uint16, single-channel, or equal B, G, R: "
    "a white- or black-hot thermal video), the default model for colour; default; thermal "
    "(also for a thermal video in a colour palette); or an ONNX/.tflite file "
    "(default: %(default)s)"
)

# Exit code of a run that finished but whose video ended before its declared length (truncated
# or damaged): its results are written, and a script can tell them from a whole video's (0).
# Bad input is 2 and a signal 128 + its number (emts.cli.entry).
INCOMPLETE_INPUT = 3

# Argument limits (docs/guides/cli.md lists them).
MAX_THREADS = (os.cpu_count() or 1) * 4  # --threads, --workers: more only thrashes


def int_in(low: int, high: int | None = None, note: str = ""):
    """argparse type: a whole number in [low, high]."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bounds = f"at least {low}" if high is None else f"between {low} and {high}"
            raise argparse.ArgumentTypeError(f"must be {bounds}{note}, got {value}")
        return value

    return parse


def float_in(low: float, high: float | None = None, low_inclusive: bool = True):
    """argparse type: a finite number in [low, high] (or (low, high] without low)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        below = value < low if low_inclusive else value <= low
        if not math.isfinite(value) or below or (high is not None and value > high):
            if high is None:
                bounds = f"a finite number {'>=' if low_inclusive else '>'} {low:g}"
            else:
                bounds = f"a finite number in [{low:g}, {high:g}]"
            raise argparse.ArgumentTypeError(f"must be {bounds}, got {text!r}")
        return value

    return parse


THREADS = int_in(1, MAX_THREADS, f" (4x this machine's {os.cpu_count() or 1} cores)")
SEED = int_in(0)
POSITIVE = int_in(1)
CLIP_FRAMES = int_in(4, 300)
INDEX = int_in(0)
PROBABILITY = float_in(0.0, 1.0)
POSITIVE_FLOAT = float_in(0.0, low_inclusive=False)
FPS = float_in(MIN_FPS, MAX_FPS)  # what a video file carries (emts.io.check_fps)


def add_threads(p) -> None:
    p.add_argument(
        "--threads",
        type=THREADS,
        default=2,
        help=f"worker threads, 1..{MAX_THREADS} (default: %(default)s)",
    )


def input_model(text: str) -> str | None:
    """``--model`` of the commands that run on a user's stream: ``auto`` (the default) or
    ``default`` (None: the default model) unless a file of that name exists here, else as
    :func:`emts.precision.named_model` (``thermal``, a file)."""
    if text in (AUTO, DEFAULT) and not Path(text).exists():
        return None if text == DEFAULT else AUTO
    return named_model(text)


def add_input_model(p) -> None:
    p.add_argument("--model", type=input_model, default=AUTO, help=INPUT_MODEL_HELP)


def model_inputs(
    shipped: bool = True, **flags: str | list[str] | None
) -> dict[str, str | list[str] | None]:
    """The model files a command reads, for :func:`emts.io.check_outputs`' ``inputs``: each
    flag's file (``model_inputs(model=args.model)`` for ``--model``) and, with ``shipped``,
    every shipped model (the commands that run the pipeline read them: ``auto``, the default
    models, ``thermal``; the commands that make model files write them)."""
    inputs = {f"the --{flag.replace('_', '-')} of this run": path for flag, path in flags.items()}
    if shipped:
        from emts.precision import shipped_files

        inputs["a model shipped with emts"] = [str(p) for p in shipped_files()]
    return inputs


# --stage-b -> ChannelConfig.warp_at (auto: each model's own, None)
STAGE_B_WARP = {AUTO: None, "paper": "network", "working": "working"}


def stage_b_warp(args: argparse.Namespace) -> str | None:
    """``--stage-b``'s warp for every model (ChannelConfig.warp_at), or None: each model's own."""
    return STAGE_B_WARP[getattr(args, "stage_b", AUTO)]


def channel_config(args: argparse.Namespace) -> ChannelConfig | None:
    """Stage B's parameters of ``--stage-b`` for every model, or None: each model's own."""
    warp = stage_b_warp(args)
    return None if warp is None else ChannelConfig(warp_at=warp)


def stage_c(args: argparse.Namespace):
    """Stage C of a command run on a user's stream (:func:`emts.apps.detect.build_stage_c`):
    ``--model`` (auto: a :class:`emts.modality.DetectorChoice`), ``--precision``,
    ``--backend``, ``--threads``, ``--threshold``, ``--network-size``, ``--detector-mode``,
    ``--coarse-pass``, ``--stage-b``."""
    from emts.apps.detect import build_stage_c

    return build_stage_c(
        args.model,
        args.detector_mode,
        precision=getattr(args, "precision", None),
        backend=getattr(args, "backend", None),
        threads=getattr(args, "threads", 2),
        threshold=getattr(args, "threshold", None),
        network_size=args.network_size,
        coarse_pass=getattr(args, "coarse_pass", AUTO) != "off",
        warp_at=stage_b_warp(args),
    )


def add_network_options(p) -> None:
    """Detection threshold, detector model, threads and frame rate: what every command
    that runs the network on a stream takes."""
    p.add_argument(
        "--threshold",
        type=PROBABILITY,
        default=0.3,
        help="detection score tau_s in [0, 1] (default: %(default)s)",
    )
    add_input_model(p)
    add_threads(p)
    add_fps(p)


def open_stream(args: argparse.Namespace):
    """``SOURCE`` of a command run on a user's stream, opened (:func:`emts.io.open_source`,
    unreadable images as placeholders) with ``--fps``: the command passes it to its job and
    reads its ``incomplete`` afterwards (:func:`finished`)."""
    from emts.io import open_source

    timeout = getattr(args, "reconnect_timeout", None)
    return open_source(args.source, fps=args.fps, placeholders=True, reconnect_timeout=timeout)


def finished(frames) -> int:
    """The exit code of a job that read ``frames`` to the end: :data:`INCOMPLETE_INPUT` if the
    video ended early (the source has warned), else 0."""
    return INCOMPLETE_INPUT if frames.incomplete else 0


def add_fps(p) -> None:
    p.add_argument(
        "--fps",
        type=FPS,
        help=f"frame rate of an image folder or glob, {MIN_FPS:g} to {MAX_FPS:g} (default 30); a "
        "video keeps its own unless this is given",
    )


def parse_size(text: str) -> tuple[int, int]:
    """argparse type: a size WxH (width, height)."""
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected WxH, e.g. 384x288") from None
    return width, height


def network_size(text: str) -> tuple[int, int]:
    """argparse type: a size WxH the detector and Stage B can run at
    (:func:`emts.geometry.check_network_size`: multiples of 16, at least 5:4 wide, at most
    640x496)."""
    from emts.geometry import check_network_size

    try:
        return check_network_size(parse_size(text))
    except BadInputError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


# Stage C's modes (emts.stages.c_detect.stage.DETECTOR_MODES), the default first
DETECTOR_MODE_HELP = {
    "temporal": "the network, its scores averaged over the last frames in stabilized "
    "coordinates; emts.stages.c_detect.temporal",
    "plain": "the network, frame by frame, as in the paper",
    "fused": "compensated-difference blobs at 640x512 scored by the network; "
    "emts.stages.c_detect.fusion",
}


def add_detector_mode(
    p: argparse.ArgumentParser, modes=tuple(DETECTOR_MODE_HELP), network_size: bool = True
) -> None:
    described = ", ".join(f"{m} ({DETECTOR_MODE_HELP[m]})" for m in modes)
    p.add_argument(
        "--detector-mode",
        choices=list(modes),
        default=modes[0],
        help=f"Stage C: {described} (default: %(default)s)",
    )
    if network_size:
        add_network_size(p)


def add_network_size(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--network-size",
        type=network_size,
        metavar="WxH",
        help="run Stages B and C at this size (default: the model's own; 256x192 for the "
        "shipped one, which runs at any size): larger finds smaller people -- on real thermal "
        "stills 512x384 scores AP 0.72 against 0.44 -- at more false positives on textured "
        "RGB ground and about 3x the Stage B+C time; multiples of 16, at least 5:4 wide, at most "
        "640x496",
    )
    p.add_argument(
        "--coarse-pass",
        choices=[AUTO, "off"],
        default=AUTO,
        help="Stage C's coarse pass (temporal mode): with auto a model run at twice the size it "
        "was trained at (the thermal model at 512x384) also runs at its training size, for "
        "people too tall for the finer pass (over 50 px at 640x512; real thermal persons "
        "magnified to ~94 px: AP@0.25 0.69 -> 0.85), at ~0.7 ms (~14 %%) more a thermal "
        "frame; off: the finer pass alone (default: %(default)s)",
    )
    p.add_argument(
        "--stage-b",
        choices=list(STAGE_B_WARP),
        default=AUTO,
        help="Stage B's warp: auto (each model's own: working for the thermal model, paper "
        "for the default one), paper (the previous network image warped bilinearly, the "
        "paper's) or working (both 640x512 frames resampled alike: less ground texture left "
        "in R on a moving camera; with the default model a real colour clip along a gust path "
        "0.51 -> 0.63 of the walkers at 0.52 -> 0.20 false positives a frame, but the "
        "labelled RGB drone clip 0.92 -> 0.88; docs/history.md 'Real footage') "
        "(default: %(default)s)",
    )


def add_precision(p: argparse.ArgumentParser) -> None:
    """``--precision`` and ``--backend`` of the shipped models (issue 11)."""
    p.add_argument(
        "--precision",
        choices=PRECISIONS,
        default=None,
        help=f"shipped models to run: fp32, int8, or auto = whichever runs faster on this "
        f"machine, measured once at start-up (default: {DEFAULT_PRECISION}); for the shipped "
        "models (--model auto, default, thermal), not a --model FILE",
    )
    p.add_argument(
        "--backend",
        choices=BACKENDS,
        default=None,
        help=f"runtime of the shipped models: onnxruntime (.onnx) or litert (.tflite through "
        f"LiteRT/XNNPACK on --threads threads; needs emts[litert]) (default: {DEFAULT_BACKEND}; "
        "with --model the file's suffix picks it)",
    )


def require_train_extra() -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        raise BadInputError(
            "this command needs the training extra: pip install 'emts[train]'"
        ) from None


def open_clip_set(folder: str):
    """:class:`emts.synth.store.ClipSet`, with a broken manifest reported as bad input."""
    from emts.synth.store import ClipSet

    manifest = Path(folder) / "manifest.json"
    try:
        clip_set = ClipSet(folder)
    except BadInputError:
        raise
    except (OSError, ValueError) as error:  # ValueError: JSON and UTF-8 decoding errors
        raise BadInputError(
            f"{manifest} cannot be read ({error}); regenerate the set with emts synth"
        ) from None
    if not isinstance(clip_set.manifest, dict):
        raise BadInputError(f"{manifest} is not a clip-set manifest; regenerate it with emts synth")
    return clip_set


def command_line() -> str:
    """The command line as given, for reports and provenance."""
    return " ".join(["emts", *sys.argv[1:]])


def calibration_sets(args: argparse.Namespace) -> dict[str, str]:
    """The clip sets of ``--tier1`` and ``--negatives`` (quantization calibration)."""
    return {"tier1": args.tier1, "negatives": args.negatives}
