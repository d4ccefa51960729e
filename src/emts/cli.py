"""The ``emts`` command.

Every subcommand reports bad input (arguments, paths, files) as one line on stderr and exits
with code 2; results are streamed (JSON lines flushed per frame), and SIGINT, SIGTERM and SIGHUP
all end a run the same way -- files finished, one line, exit code 128 + the signal number -- so
an interrupted run keeps what it computed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from emts import __version__, cli_quant
from emts.config import ChannelConfig
from emts.errors import BadInputError, EmtsError
from emts.io import (
    check_outputs,
    check_png,
    check_video_suffix,
    check_writable,
)
from emts.modality import AUTO, DEFAULT
from emts.precision import named_model
from emts.synth.common import CONTRAST_SCALE

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


# Argument limits (the README lists them).
MAX_THREADS = (os.cpu_count() or 1) * 4  # --threads, --workers: more only thrashes
MAX_BENCH_FRAMES = 3000  # bench holds its whole clip in memory (640x512: 0.33 MB a frame)
MAX_BENCH_WARMUP = 1000
MAX_DEMO_FRAMES = 3000  # demo renders its whole clip in memory first (about 1 GB at 3,000)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``emts: error: <what>; see 'emts track --help'``."""

    def error(self, message: str):  # type: ignore[override]
        print(f"emts: error: {message}; see '{self.prog} --help'", file=sys.stderr)
        sys.exit(2)


def _int_in(low: int, high: int | None = None, note: str = ""):
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


def _float_in(low: float, high: float | None = None, low_inclusive: bool = True):
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


_THREADS = _int_in(1, MAX_THREADS, f" (4x this machine's {os.cpu_count() or 1} cores)")
_SEED = _int_in(0)
_POSITIVE = _int_in(1)
_CLIP_FRAMES = _int_in(4, 300)
_INDEX = _int_in(0)
_PROBABILITY = _float_in(0.0, 1.0)
_POSITIVE_FLOAT = _float_in(0.0, low_inclusive=False)
_FPS = _POSITIVE_FLOAT


def _add_threads(p) -> None:
    p.add_argument(
        "--threads",
        type=_THREADS,
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


def _add_input_model(p) -> None:
    p.add_argument("--model", type=input_model, default=AUTO, help=INPUT_MODEL_HELP)


def _stage_c(args: argparse.Namespace):
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
        warp_at=_stage_b_warp(args),
    )


# --stage-b -> ChannelConfig.warp_at (auto: each model's own, None)
STAGE_B_WARP = {AUTO: None, "paper": "network", "working": "working"}


def _stage_b_warp(args: argparse.Namespace) -> str | None:
    """``--stage-b``'s warp for every model (ChannelConfig.warp_at), or None: each model's own."""
    return STAGE_B_WARP[getattr(args, "stage_b", AUTO)]


def _channel_config(args: argparse.Namespace) -> ChannelConfig | None:
    """Stage B's parameters of ``--stage-b`` for every model, or None: each model's own."""
    warp = _stage_b_warp(args)
    return None if warp is None else ChannelConfig(warp_at=warp)


def _add_network_options(p) -> None:
    """Detection threshold, detector model, threads and frame rate: what every command
    that runs the network on a stream takes."""
    p.add_argument(
        "--threshold",
        type=_PROBABILITY,
        default=0.3,
        help="detection score tau_s in [0, 1] (default: %(default)s)",
    )
    _add_input_model(p)
    _add_threads(p)
    _add_fps(p)


def _add_fps(p) -> None:
    p.add_argument(
        "--fps",
        type=_FPS,
        help="frame rate of an image folder or glob (default 30); a video keeps its own "
        "unless this is given",
    )


def _open_clip_set(folder: str):
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


def _cmd_channels(args: argparse.Namespace) -> int:
    from emts.apps.channels import run_channels

    out = None if args.no_video else args.out
    check_video_suffix("--out", out)
    check_outputs(args.source, {"--out": out, "--jsonl": args.jsonl})
    frames = run_channels(
        args.source,
        out,
        args.jsonl,
        ego_compensation=not args.no_ego,
        fps=args.fps,
        model=args.model,
        threshold=args.threshold,
    )
    written = [p for p in (out, args.jsonl) if p and p != "-"]
    print(f"{frames} frames -> {', '.join(written) or 'nothing written'}", file=sys.stderr)
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from emts.apps.bench import format_table, run_bench

    check_outputs(None, {"--json": args.json})
    if args.peer_yolo and args.pace is not None:
        raise BadInputError("--pace times the pipeline alone; --peer-yolo runs frames back to back")
    if args.peer_yolo:
        report, table = cli_quant.bench_peer(args)
    else:
        report = run_bench(
            frames=args.frames,
            warmup=args.warmup,
            threads=args.threads,
            model=args.model,
            precision=args.precision,
            detector_mode=args.detector_mode,
            backend=args.backend,
            network_size=args.network_size,
            warp_at=_stage_b_warp(args),  # None: the model's own
            pace=args.pace,
            coarse_pass=args.coarse_pass != "off",
        )
        table = format_table(report)
    print(table)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from emts.apps.demo import TAP_FRAME, run_demo

    if args.frames < TAP_FRAME + 1:
        raise BadInputError(
            f"--frames {args.frames}: the operator taps at frame {TAP_FRAME}; "
            f"give at least {TAP_FRAME + 1} frames"
        )
    check_writable("--out-dir", Path(args.out_dir), folder=True)
    run_demo(Path(args.out_dir), frames=args.frames, seed=args.seed)
    return 0


def _cmd_synth_set(args: argparse.Namespace) -> int:
    from emts.synth.generate import generate_set

    check_writable("--out", Path(args.out), folder=True)
    manifest = generate_set(
        args.set,
        args.out,
        clips=args.clips,
        seed=args.seed,
        workers=args.workers,
        hituav=args.hituav,
        frames=args.frames,
        mesh_walkers=args.mesh_walkers,
        contrast_scale=args.contrast_scale,
    )
    print(
        f"{manifest['clips']} clips, {manifest['frames']} frames in {manifest['seconds']} s "
        f"({manifest['frames_per_second']} frames/s), "
        f"{manifest['bytes'] / 1e6:.1f} MB -> {args.out}"
    )
    return 0


def _cmd_synth_preview(args: argparse.Namespace) -> int:
    from emts.synth.preview import contact_sheet

    if len(_open_clip_set(args.folder)) == 0:
        raise BadInputError(f"{args.folder}: the set has no clips")
    check_png("--out", args.out)
    check_outputs(None, {"--out": args.out})
    sheet = contact_sheet(args.folder, args.out, clips=args.clips, frame=args.frame)
    if not sheet.is_file():
        raise BadInputError(f"cannot write {args.out}")
    print(sheet)
    return 0


def _cmd_synth_export(args: argparse.Namespace) -> int:
    from emts.synth.preview import export_clip

    clip_set = _open_clip_set(args.folder)
    check_writable("OUT", Path(args.out), folder=True)
    if args.clip not in clip_set.indices:
        raise BadInputError(f"{args.folder}: no clip {args.clip}")
    print(export_clip(args.folder, args.out, args.clip))
    return 0


def _add_synth(sub) -> None:
    from emts.synth.clips import TIER1_FRAMES
    from emts.synth.common import SETS

    synth = sub.add_parser(
        "synth",
        help="generate and inspect the synthetic motion curriculum",
        description="Generate clip sets of the synthetic motion curriculum (paper section 4), "
        "look at them, and export clips as image folders. The on-disk format is described in "
        "the README.",
    )
    synth_sub = synth.add_subparsers(dest="synth_command", required=True, metavar="SET|ACTION")
    for name, kind in SETS.items():
        p = synth_sub.add_parser(name, help=f"{kind.description} (default {kind.default_clips})")
        p.add_argument("--out", required=True, help="output folder")
        p.add_argument(
            "--clips", type=_POSITIVE, help=f"number of clips (default {kind.default_clips})"
        )
        p.add_argument("--seed", type=_SEED, default=0, help="base seed (default: %(default)s)")
        p.add_argument(
            "--frames",
            type=_CLIP_FRAMES,
            default=TIER1_FRAMES,
            help="frames per clip at 30 fps (default: %(default)s, the paper's); longer clips "
            "give Stage E windows at lower frame rates (emts train verifier --strides)",
        )
        p.add_argument(
            "--mesh-walkers",
            type=_PROBABILITY,
            default=0.0,
            metavar="P",
            help="share of persons drawn as posed MakeHuman body meshes instead of the "
            "procedural capsule figure (default: %(default)s)",
        )
        p.add_argument(
            "--contrast-scale",
            type=_POSITIVE_FLOAT,
            default=CONTRAST_SCALE,
            metavar="S",
            help="multiply every mover's contrast against its ground (persons, animals, "
            "vehicles) by S (default: %(default)s: the median person as far off its ground "
            "as real ones; 1 renders the sets made before 2026-11-27)",
        )
        p.add_argument(
            "--workers", type=_THREADS, default=2, help="processes (default: %(default)s)"
        )
        p.add_argument(
            "--hituav",
            metavar="DIR",
            help="HIT-UAV folder (train.json + train/) for real plates; without it plates "
            "are procedural only",
        )
        p.set_defaults(run=_cmd_synth_set, set=name)
    p = synth_sub.add_parser("preview", help="contact sheet (L, R, D with boxes) of a set")
    p.add_argument("folder", metavar="DIR")
    p.add_argument("--out", required=True, help="PNG to write")
    p.add_argument("--clips", type=_POSITIVE, default=8, help="rows (default: %(default)s)")
    p.add_argument(
        "--frame", type=_INDEX, default=9, help="frame of each clip (default: %(default)s)"
    )
    p.set_defaults(run=_cmd_synth_preview)
    p = synth_sub.add_parser("export", help="write one clip as PNG frames plus labels.json")
    p.add_argument("folder", metavar="DIR")
    p.add_argument("out", metavar="OUT")
    p.add_argument("--clip", type=_INDEX, default=0, help="clip index (default: %(default)s)")
    p.set_defaults(run=_cmd_synth_export)


def _require_train_extra() -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        raise BadInputError(
            "this command needs the training extra: pip install 'emts[train]'"
        ) from None


def _cmd_train_detector(args: argparse.Namespace) -> int:
    _require_train_extra()
    from emts.train.loop import TrainConfig, train_detector

    for folder in (args.tier1, args.negatives):
        if not (Path(folder) / "manifest.json").is_file():
            raise BadInputError(f"{folder}: not a clip set; generate it with emts synth")
        _open_clip_set(folder)
    check_writable("--out", Path(args.out), folder=True)
    if args.tsm is not None:
        return cli_quant.cmd_train_tsm(args)
    config = TrainConfig(
        seed=args.seed,
        threads=args.threads,
        phase1_epochs=args.phase1_epochs,
        phase2_epochs=args.phase2_epochs,
        **_recipe_overrides(args),
    )
    if args.qat_from is not None:
        from emts.train.qat import qat_detector

        report = qat_detector(
            args.qat_from,
            args.out,
            args.tier1,
            args.negatives,
            args.hituav,
            epochs=args.qat_epochs,
            config=config,
            command="emts " + " ".join(sys.argv[1:]),
        )
        print(
            f"QAT in {report['seconds']} s -> {args.out}/model.onnx (fp32 weights trained under "
            f"int8 fake quantization; quantize it with: emts quantize detector --model "
            f"{args.out}/model.onnx --out OUT.int8.onnx)"
        )
        return 0
    device = args.device
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    metrics = train_detector(
        args.out, args.tier1, args.negatives, args.hituav, config, device=device
    )
    print(
        f"trained in {metrics['train_seconds']} s -> {args.out}/model.pt, metrics.json, curves.png"
    )
    return 0


def _add_train_detector_recipe(p) -> None:
    """Issue 8's training options; left out, each is TrainConfig's default (the shipped
    recipe, see src/emts/models/detector.json)."""
    p.add_argument("--loader-workers", type=int, help="processes preparing batches")
    p.add_argument(
        "--invert-l", type=float, help="probability of flipping L's polarity in a sample"
    )
    p.add_argument(
        "--l-gain",
        type=float,
        nargs=2,
        metavar=("LO", "HI"),
        help="log-uniform contrast gain range of L (R and D scale with it)",
    )
    p.add_argument(
        "--l-dropout",
        type=float,
        help="share of samples whose L is flattened to its mean (motion channels only)",
    )
    p.add_argument(
        "--mirror",
        type=float,
        help="share of samples mirrored left-right, all frames alike (default 0: none)",
    )
    p.add_argument(
        "--still-speed",
        type=float,
        help="persons slower than this (px/frame, camera motion removed) are ignore regions; "
        "0 keeps every person a positive",
    )
    p.add_argument(
        "--residual-reference",
        type=float,
        help="normalize each training frame's residual level to this, as the runtime detector "
        "does (0.0095 there); default 0: Stage B's channels as they are (the shipped recipe)",
    )
    p.add_argument(
        "--randomized-sources",
        nargs="+",
        choices=["tier1", "negative", "tier2"],
        help="the sources --invert-l and --l-gain apply to (default: all three; tier2 are "
        "real thermal stills, where warm = person holds)",
    )
    p.add_argument(
        "--size-weight",
        type=float,
        help="weight of the log-size L1 in the total loss (default 0.1, the paper's eq. 6)",
    )
    p.add_argument(
        "--residual-baseline",
        type=int,
        metavar="N",
        help="R over N frames: the frame N back, through Stage A's motions, instead of the "
        "previous one (D stays the previous frame's; slow walkers leave N times the residual); "
        "default 1, eq. 2",
    )
    p.add_argument(
        "--variant",
        choices=["paper", "wide"],
        help="architecture: paper (default; 22,021 parameters, Table 2) or wide (1.5x the "
        "channels, 46,541 parameters, 1.8x the MACs)",
    )
    p.add_argument(
        "--network-size",
        type=_size,
        metavar="WxH",
        help="the detector's input size, trained and run at (default 256x192, the paper's; "
        "e.g. 384x288: people 1.5x taller in network px); multiples of 8, at least 5:4 wide",
    )
    p.add_argument(
        "--crop",
        type=_size,
        metavar="WxH",
        help="train on random windows of this size of the --network-size channels (e.g. "
        "256x192: the per-step cost of the paper's size); default: whole frames",
    )


def _size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected WxH, e.g. 384x288") from None
    return width, height


def _recipe_overrides(args: argparse.Namespace) -> dict:
    names = (
        "loader_workers",
        "invert_l",
        "l_gain",
        "l_dropout",
        "mirror",
        "still_speed",
        "randomized_sources",
        "residual_reference",
        "network_size",
        "crop",
        "size_weight",
        "residual_baseline",
    )
    out = {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}
    if "network_size" in out:
        from emts.geometry import network_letterbox

        network_letterbox(out["network_size"])  # a clear error for an unusable size
    crop = out.get("crop")
    size = out.get("network_size", (256, 192))
    if crop is not None and not (
        crop[0] % 8 == 0 and crop[1] % 8 == 0 and 0 < crop[0] <= size[0] and 0 < crop[1] <= size[1]
    ):
        raise BadInputError(f"--crop {crop[0]}x{crop[1]}: multiples of 8, within --network-size")
    if getattr(args, "variant", None) is not None:
        from emts.train.model import DETECTOR_VARIANTS

        out["model"] = DETECTOR_VARIANTS[args.variant]
    if "randomized_sources" in out:
        out["randomized_sources"] = tuple(out["randomized_sources"])
    if "l_gain" in out:
        low, high = out["l_gain"]
        if not 0 < low <= high:
            raise BadInputError("--l-gain: expected 0 < LO <= HI")
        out["l_gain"] = (low, high)
    if not 0 <= out.get("invert_l", 0) <= 1:
        raise BadInputError("--invert-l: expected a probability in [0, 1]")
    if not 0 <= out.get("l_dropout", 0) <= 1:
        raise BadInputError("--l-dropout: expected a probability in [0, 1]")
    if not 0 <= out.get("mirror", 0) <= 1:
        raise BadInputError("--mirror: expected a probability in [0, 1]")
    if out.get("residual_reference", 0) < 0:
        raise BadInputError("--residual-reference must not be negative")
    if out.get("still_speed", 0) < 0 or out.get("loader_workers", 0) < 0:
        raise BadInputError("--still-speed and --loader-workers must not be negative")
    if out.get("size_weight", 1) <= 0:
        raise BadInputError("--size-weight must be positive")
    if out.get("residual_baseline", 1) < 1:
        raise BadInputError("--residual-baseline must be at least 1")
    return out


def _cmd_ensemble(args: argparse.Namespace) -> int:
    _require_train_extra()
    from emts.precision import named_model
    from emts.train.ensemble import merge_detectors

    check_writable("--out", Path(args.out))
    meta = merge_detectors([named_model(m) for m in args.models], args.out)
    scales = meta.get("emts_box_scale", "none (not every member records one)")
    print(f"ensemble of {len(args.models)} detectors: {args.out} (box scales: {scales})")
    return 0


def _trained_residual_baseline(model: Path) -> int | None:
    """The frames R spanned in training, from the run folder's metrics.json beside a
    model.pt (None when it says nothing)."""
    metrics = model.parent / "metrics.json"
    try:
        config = json.loads(metrics.read_text()).get("config") or {}
    except (OSError, ValueError):
        return None
    return config.get("residual_baseline")


def _cmd_export(args: argparse.Namespace) -> int:
    _require_train_extra()
    from emts.train.export import export_onnx, load_trained, reshape_onnx

    if not Path(args.model).is_file():
        raise BadInputError(f"{args.model}: no such model")
    if args.fit_box_scale and not args.any_size:
        raise BadInputError("--fit-box-scale runs the model at other sizes: add --any-size")
    if args.run_size and not args.any_size:
        raise BadInputError("--run-size runs the model at another size: add --any-size")
    if args.residual_reference is not None and not 0 <= args.residual_reference < 1:
        raise BadInputError(
            f"--residual-reference must be in [0, 1) (0: remove it), got {args.residual_reference}"
        )
    if args.run_size:
        from emts.geometry import network_letterbox

        network_letterbox(args.run_size)  # one line for a size the geometry cannot use
    if args.residual_baseline is not None and args.residual_baseline < 1:
        raise BadInputError("--residual-baseline must be at least 1")
    if args.residual_baseline is None and Path(args.model).suffix != ".onnx":
        args.residual_baseline = _trained_residual_baseline(Path(args.model))
    if Path(args.model).suffix == ".onnx":  # reshape an exported detector, weights untouched
        from emts.stages.c_detect.detector import RUN_SIZE_METADATA, Detector, recorded_size

        detector = Detector(args.model, threads=1)
        size = recorded_size(detector.session) or detector.network_size  # the trained size
        run_size = recorded_size(detector.session, RUN_SIZE_METADATA)
        if run_size and not args.any_size:  # the thermal model would quietly become 256x192
            print(
                "{}: fixed at its trained {}x{}; its run size {}x{} is dropped (add --any-size "
                "to keep it)".format(args.model, *size, *run_size),
                file=sys.stderr,
            )
        out = reshape_onnx(args.model, args.out, size, args.any_size)
    else:
        out = export_onnx(load_trained(args.model), args.out, any_size=args.any_size)
    if args.residual_reference is not None:  # before the box scale: its fit runs the model
        from emts.train.export import record_residual_reference

        record_residual_reference(out, args.residual_reference or None)
    if args.stage_b is not None:
        from emts.train.export import record_stage_b_warp

        record_stage_b_warp(out, STAGE_B_WARP[args.stage_b])
    if args.residual_baseline is not None:
        from emts.train.export import record_residual_baseline

        record_residual_baseline(out, args.residual_baseline)
    if args.mirror_average is not None:
        from emts.train.export import record_mirror_average

        record_mirror_average(out, args.mirror_average == "on")
    if args.fit_box_scale:
        from emts.eval.real import fit_box_scale
        from emts.train.export import record_box_scale

        scales = fit_box_scale(out, args.hituav, args.fit_box_scale)
        record_box_scale(out, scales)
        print(f"box scale (HIT-UAV train): {scales}")
    if args.run_size:
        from emts.train.export import record_run_size

        record_run_size(out, args.run_size)
    print(out)
    return 0


def _cmd_detect(args: argparse.Namespace) -> int:
    from emts.apps.detect import run_detect
    from emts.stages.c_detect.boxfit import DEFAULT_BOX_FIT

    check_outputs(args.source, {"--jsonl": args.jsonl})
    box_fit = None if args.network_boxes else DEFAULT_BOX_FIT
    run_detect(
        args.source,
        args.jsonl,
        _stage_c(args),
        args.threshold,
        box_fit,
        channel_config=_channel_config(args),
        fps=args.fps,
    )
    return 0


def _cmd_eval_detect(args: argparse.Namespace) -> int:
    _require_train_extra()
    from emts.eval.detect import (
        ClassicalDetector,
        NetworkDetect,
        StreamDetect,
        evaluate_bench,
        summarize,
        write_report,
    )
    from emts.stages.c_detect.detector import Detector

    _open_clip_set(args.bench)
    detector = Detector(args.model)
    if args.detector_mode == "temporal":
        coarse = args.coarse_pass != "off"
        network = {"EMTS-Det (temporal)": StreamDetect(detector, coarse_pass=coarse)}
    else:
        network = {"EMTS-Det": NetworkDetect(detector)}
    detects = {**network, "classical": ClassicalDetector()}
    curves = {
        name: summarize(evaluate_bench(fn, args.bench, args.clips)) for name, fn in detects.items()
    }
    command = " ".join(["emts", *sys.argv[1:]]) if sys.argv else "emts eval detect"
    write_report(
        Path(args.out),
        "Detector on the held-out synthetic bench",
        {"held-out bench": curves},
        command,
    )
    for name, summary in curves.items():
        print(f"{name}: AP@0.25 {summary['AP@0.25']:.3f}  AP@0.5 {summary['AP@0.5']:.3f}")
    print(f"report: {args.out}/report.md")
    return 0


def _cmd_eval_hituav(args: argparse.Namespace) -> int:
    _require_train_extra()
    from emts.eval.detect import (
        ClassicalDetector,
        NetworkDetect,
        evaluate_hituav,
        summarize,
        write_report,
    )
    from emts.stages.c_detect.detector import Detector

    sections = {}
    for variant, title in (
        ("persons", "only persons move"),
        ("vehicles", "persons and vehicles move"),
    ):
        detects = {
            "EMTS-Det": NetworkDetect(Detector(args.model)),
            "classical": ClassicalDetector(),
        }
        results = evaluate_hituav(detects, args.hituav, args.split, variant)
        sections[f"HIT-UAV {args.split}, {title}"] = {k: summarize(v) for k, v in results.items()}
    command = " ".join(["emts", *sys.argv[1:]])
    write_report(
        Path(args.out), f"Detector on real HIT-UAV {args.split} pseudo-clips", sections, command
    )
    for section, curves in sections.items():
        for name, summary in curves.items():
            ap = f"AP@0.25 {summary['AP@0.25']:.3f}  AP@0.5 {summary['AP@0.5']:.3f}"
            print(f"{section}: {name}: {ap}")
    print(f"report: {args.out}/report.md")
    return 0


def _cmd_eval_real(args: argparse.Namespace) -> int:
    _require_train_extra()
    from emts.eval.real import evaluate_real, parse_models

    if args.hituav_images is not None and args.hituav_images < 1:
        raise BadInputError("--hituav-images must be at least 1")
    models = parse_models(args.model)
    if args.network_size is not None:
        from emts.stages.c_detect.detector import default_model_path

        models["shipped"] = (str(default_model_path()), args.network_size)
    sections = evaluate_real(
        models,
        args.out,
        args.person12,
        args.hituav,
        seed=args.seed,
        hituav_images=args.hituav_images,
        command=" ".join(["emts", *sys.argv[1:]]),
        seeds=args.seeds,
    )
    for title, section in sections.items():
        for name, s in section.items():
            if "(" in name or name.startswith("classical"):
                continue
            cells = ", ".join(f"{k} {v}" for k, v in s.items() if "@" in k)
            print(f"{title}: {name}: {cells}")
    print(f"report: {args.out}/report.md")
    return 0


def _add_eval_real(eval_sub) -> None:
    p = eval_sub.add_parser(
        "real",
        help="real-footage suite: uav123-person12 and HIT-UAV val, models vs classical baseline",
        description="Recall/FP/AP on uav123-person12 frames 1-201 and AP on HIT-UAV val "
        "pseudo-clips (persons; persons + vehicles) for the shipped model and every --model, "
        "frame by frame and in Stage C's temporal mode, their channel ablations and the "
        "classical compensated-difference baseline (threshold swept). Writes report.md, "
        "metrics.json, PR curves and contact sheets.",
    )
    p.add_argument("--out", default="reports/real", help="report folder (default: %(default)s)")
    p.add_argument(
        "--model",
        action="append",
        metavar="[NAME=]PATH[@WxH]",
        help="a candidate ONNX detector beside the shipped one (repeatable); @WxH runs it at "
        "that network size (e.g. src/emts/models/detector.onnx@512x384)",
    )
    p.add_argument("--person12", default="../shared/data/uav123-person12", help="person12 folder")
    p.add_argument("--hituav", default="../shared/data/hit-uav", help="HIT-UAV folder")
    p.add_argument("--hituav-images", type=int, help="only the first N val stills (quick runs)")
    p.add_argument("--seed", type=int, default=0, help="pseudo-clip seed (default: %(default)s)")
    p.add_argument(
        "--seeds",
        type=int,
        default=1,
        help="pool the HIT-UAV pseudo-clips of this many seeds from --seed (default: %(default)s)",
    )
    p.add_argument(
        "--network-size",
        type=_size,
        metavar="WxH",
        help="run the shipped detector (and the fused mode with the blend fitted at that size) "
        "at this network size (default: its own, 256x192)",
    )
    p.set_defaults(run=_cmd_eval_real)


def _labelled_clip(args: argparse.Namespace):
    """(ground truth, first frame, last frame or None) of a clip command's --gt/--frames."""
    from emts.eval.track_eval import parse_span, read_ground_truth

    truth = read_ground_truth(args.gt, args.target_id)
    first, last = parse_span(args.frames) if args.frames else (0, None)
    if last is not None and last >= len(truth):
        raise BadInputError(f"--frames {args.frames}: the ground truth has {len(truth)} rows")
    return truth, first, last


def _clip_name(clip: str) -> str:
    """A clip's name for reports: its folder's name for an image folder called frames/img."""
    path = Path(clip).resolve()
    return path.parent.name if path.name in ("frames", "img", "images") else path.name


def _add_labelled_clip(p: argparse.ArgumentParser) -> None:
    p.add_argument("clip", metavar="CLIP", help="video file, image folder or quoted glob")
    p.add_argument(
        "--gt",
        required=True,
        help="ground truth: UAV123/OTB x,y,w,h lines (NaN = absent; line i+1 = frame i) or "
        "MOTChallenge gt.txt with --target-id",
    )
    p.add_argument("--target-id", type=int, help="MOTChallenge target id")


def _cmd_eval_track(args: argparse.Namespace) -> int:
    _require_train_extra()
    from emts.apps.track import LockRequest
    from emts.eval.track_eval import TrackEvalConfig, evaluate_track, parse_span, write_report
    from emts.pipeline import Pipeline
    from emts.stages.e_verify import Verifier
    from emts.stages.e_verify import default_model_path as default_verifier

    truth, first, last = _labelled_clip(args)
    point = box = None
    lock_frame = first
    auto = False
    if args.lock is not None:
        request = LockRequest.parse(args.lock)
        auto = request.auto
        if not auto:
            point, box, lock_frame = (request.x, request.y), request.box, request.frame
    elif args.lock_gt is not None:
        lock_frame = args.lock_gt
    if lock_frame >= len(truth):
        raise BadInputError(f"lock frame {lock_frame}: the ground truth has {len(truth)} rows")
    out = Path(args.out)
    check_writable("--out", out, folder=True)
    verifier = None
    if not args.no_verifier and (args.verifier or default_verifier().is_file()):
        verifier = Verifier(args.verifier)
    pipeline = Pipeline(
        _stage_c(args), verifier, auto_lock=auto, channel_config=_channel_config(args)
    )
    config = TrackEvalConfig(
        lock_frame=lock_frame,
        lock_point=point,
        lock_box=box,
        auto=auto,
        first=first,
        last=last,
        occlude=tuple(parse_span(t) for t in args.occlude or []),
        remove=tuple(parse_span(t) for t in args.remove or []),
        gust=args.gust,
        fps=args.fps,
    )
    out.mkdir(parents=True, exist_ok=True)
    report = evaluate_track(args.clip, truth, config, pipeline, out / "frames.jsonl")
    write_report(report, out, " ".join(["emts", *sys.argv[1:]]), _clip_name(args.clip))
    print(
        f"lock recall {report['lock_recall']:.3f} over {report['visible_frames']} visible "
        f"frames, {report['false_lock_frames']} false-lock frames, centre error median "
        f"{report['centre_error_px']['median']} px, first lock at frame "
        f"{report['first_lock_frame']}"
    )
    for span in report["hidden_spans"]:
        print(
            f"{span['kind']} {span['frames'][0]}:{span['frames'][1]}: locked "
            f"{span['locked_frames_after_vanishing']} frames after vanishing, "
            f"{span['relocks_while_hidden']} relocks while hidden, recovered after "
            f"{span['recovery_frames']} frames"
        )
    print(f"report: {out}/report.md")
    return 0


def _add_eval_track(eval_sub) -> None:
    p = eval_sub.add_parser(
        "track",
        help="lock recall, false locks and recovery on a real clip with ground truth",
        description="Tap the person (by default at the ground truth's centre on the first "
        "frame of --frames) and measure: lock recall (target centre within max(20 px, h/2) "
        "of the truth), false-lock frames, centre error, first-lock frame, and for every "
        "--occlude/--remove span how long the lock stayed, whether anything else was locked "
        "and how many frames the recovery took. Writes report.md, report.json, frames.jsonl "
        "and timeline.png.",
    )
    _add_labelled_clip(p)
    lock = p.add_mutually_exclusive_group()
    lock.add_argument(
        "--lock",
        help="X,Y[@F] or X,Y,W,H[@F] in input px (as emts track), or 'auto': no tap, the "
        "pipeline locks on its own (section 6.7) and is scored from the first frame",
    )
    lock.add_argument(
        "--lock-gt",
        type=_INDEX,
        metavar="F",
        help="tap at the ground truth's centre on frame F (default: first frame of --frames)",
    )
    p.add_argument("--frames", metavar="A:B", help="evaluate frames A..B (default: all labelled)")
    p.add_argument(
        "--occlude",
        action="append",
        metavar="A:B",
        help="hide the person behind a scene-anchored inpainted patch on frames A..B (repeatable)",
    )
    p.add_argument(
        "--remove",
        action="append",
        metavar="A:B",
        help="cut the person out of frames A..B, as if out of view (repeatable)",
    )
    p.add_argument(
        "--gust", type=_INDEX, metavar="SEED", help="warp the clip along a gusty camera path"
    )
    _add_input_model(p)
    p.add_argument("--verifier", help="ONNX verifier (default: the shipped model)")
    p.add_argument("--no-verifier", action="store_true", help="run without Stage E")
    p.add_argument("--out", default="reports/track", help="report folder (default: %(default)s)")
    _add_fps(p)
    _add_detector_mode(p)
    p.set_defaults(run=_cmd_eval_track)


def _cmd_eval_verifier(args: argparse.Namespace) -> int:
    _require_train_extra()
    from emts.eval.real import parse_models
    from emts.eval.verifier_real import (
        VerifierRealConfig,
        evaluate_verifier_real,
        write_report,
    )

    truth, first, last = _labelled_clip(args)
    models = parse_models(args.model)
    for name, path in models.items():
        if isinstance(path, tuple):
            raise BadInputError(f"--model {name}: a verifier takes no @WxH")
    out = Path(args.out)
    check_writable("--out", out, folder=True)
    config = VerifierRealConfig(fps=args.fps, first=first, last=last, offset=args.offset)
    report = evaluate_verifier_real(args.clip, truth, models, config)
    write_report(report, out, " ".join(["emts", *sys.argv[1:]]), _clip_name(args.clip))
    windows = report["windows"]
    print(f"{windows['person']} person and {windows['ground']} ground windows")
    for model, m in report["models"].items():
        print(
            f"{model}: AUC {m['roc_auc_person_vs_ground']:.3f}, person median P "
            f"{m['person_median_p']:.2f} ({m['person_share_verified']:.0%} >= 0.5), ground "
            f"median {m['ground_median_p']:.2f} ({m['ground_share_verified']:.0%} >= 0.5)"
        )
    print(f"report: {out}/report.md")
    return 0


def _add_eval_verifier(eval_sub) -> None:
    p = eval_sub.add_parser(
        "verifier",
        help="Stage E on a real clip: the labelled walker against static ground beside them",
        description="16-frame descriptor windows of the labelled person's box and of same-size "
        "boxes beside them carried by the camera (static ground); P(human) of every --model "
        "on each, the ROC AUC person vs ground, and a PNG. A real-footage check beside the "
        "synthetic held-out AUC of `emts train verifier`.",
    )
    _add_labelled_clip(p)
    p.add_argument("--frames", metavar="A:B", help="frames A..B (default: all labelled)")
    p.add_argument(
        "--model",
        action="append",
        metavar="[NAME=]PATH",
        help="a verifier ONNX to compare with the shipped one (repeatable)",
    )
    p.add_argument(
        "--offset",
        type=float,
        default=3.0,
        help="ground boxes start this many box widths beside the person (default: 3)",
    )
    p.add_argument("--out", default="reports/verifier", help="report folder")
    _add_fps(p)
    p.set_defaults(run=_cmd_eval_verifier)


# Stage C's modes (emts.stages.c_detect.stage.DETECTOR_MODES), the default first
DETECTOR_MODE_HELP = {
    "temporal": "the network, its scores averaged over the last frames in stabilized "
    "coordinates; emts.stages.c_detect.temporal",
    "plain": "the network, frame by frame, as in the paper",
    "fused": "compensated-difference blobs at 640x512 scored by the network; "
    "emts.stages.c_detect.fusion",
}


def _add_detector_mode(
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
        _add_network_size(p)


def _add_network_size(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--network-size",
        type=_size,
        metavar="WxH",
        help="run Stages B and C at this size (default: the model's own; 256x192 for the "
        "shipped one, which runs at any size): larger finds smaller people -- on real thermal "
        "stills 512x384 scores AP 0.72 against 0.44 -- at more false positives on textured "
        "RGB ground and about 3x the Stage B+C time; multiples of 8, at least 5:4 wide",
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
        "labelled RGB drone clip 0.92 -> 0.88; README 'Real footage') (default: %(default)s)",
    )


def _gimbal_follow(args: argparse.Namespace):
    """Check --mavlink/--follow/--gimbal together; the gimbal follow config or None."""
    if (args.follow or args.gimbal) and not args.mavlink:
        raise BadInputError("--follow and --gimbal steer a gimbal over MAVLink: add --mavlink")
    if not args.mavlink:
        return None
    from emts.apps.mavlink import check_connection, follow_config

    check_connection(args.mavlink)
    follow = follow_config(args.gimbal) if args.follow == "gimbal" else None
    if args.gimbal and follow is None:
        raise BadInputError("--gimbal sets the follow controller: add --follow gimbal")
    return follow


def _add_stream_options(p: argparse.ArgumentParser) -> None:
    """The pipeline and drone options that ``emts track`` and ``emts serve`` share."""
    _add_network_options(p)
    p.add_argument("--verifier", help="ONNX verifier (default: the shipped model)")
    p.add_argument("--no-verifier", action="store_true", help="run without Stage E")
    p.add_argument(
        "--mavlink",
        metavar="CONNECTION",
        help="act as a MAVLink camera component on this pymavlink connection (e.g. "
        "udpout:127.0.0.1:14550, udpin:0.0.0.0:14550, /dev/ttyUSB0,57600): heartbeat, "
        "tracking status per frame, TRACK_POINT / TRACK_RECTANGLE / STOP_TRACKING commands "
        "(needs the [mavlink] extra)",
    )
    p.add_argument(
        "--follow",
        choices=["gimbal"],
        help="steer the gimbal toward the target (GIMBAL_MANAGER_SET_PITCHYAW rates; "
        "needs --mavlink)",
    )
    p.add_argument(
        "--gimbal",
        action="append",
        metavar="KEY=VALUE",
        help="override the gimbal follow controller (repeatable): kp, ki, kd, max_yaw_rate, "
        "max_pitch_rate (rad/s), dead_band, integral_limit, max_dt; see GimbalFollowConfig",
    )


def _cmd_track(args: argparse.Namespace) -> int:
    from emts.apps.track import LockRequest, run_track
    from emts.pipeline import Pipeline
    from emts.precision import model_for
    from emts.stages.e_verify import Verifier
    from emts.stages.e_verify import default_model_path as default_verifier

    lock = LockRequest.parse(args.lock)  # BadInputError: one line for every malformed tap
    check_video_suffix("--out", args.out)
    check_png("--timeline", args.timeline)
    check_outputs(
        args.source, {"--out": args.out, "--jsonl": args.jsonl, "--timeline": args.timeline}
    )
    follow = _gimbal_follow(args)
    verifier = None
    if not args.no_verifier and (args.verifier or default_verifier().is_file()):
        verifier = Verifier(model_for("verifier", args.verifier, args.precision, 1, args.backend))
    pipeline = Pipeline(
        _stage_c(args),
        verifier,
        auto_lock=lock.auto,
        threads=args.threads,
        channel_config=_channel_config(args),
    )
    with contextlib.ExitStack() as stack:
        hook = None
        if args.mavlink:
            from emts.apps.mavlink import MavlinkCamera

            hook = stack.enter_context(MavlinkCamera(args.mavlink, pipeline, follow))
        summary = run_track(
            args.source,
            lock,
            args.out,
            args.jsonl,
            pipeline,
            args.timeline,
            fps=args.fps,
            hook=hook,
        )
    print(summary.text(), file=sys.stderr)
    return 0


def _cmd_train_verifier(args: argparse.Namespace) -> int:
    _require_train_extra()
    from emts.train.verifier import TrainOptions, run

    if not (args.registration_noise >= 0 and np.isfinite(args.registration_noise)):
        raise BadInputError(f"--registration-noise {args.registration_noise}: expected >= 0")
    options = TrainOptions(
        epochs=args.epochs,
        width=args.width,
        hidden=args.hidden,
        log_eps=args.log_eps or None,
        batchnorm=args.batchnorm,
        dropout=args.dropout,
        lr=args.lr,
        one_cycle=args.schedule == "one-cycle",
        augment=tuple(args.augment),
        seed=args.seed,
        resolution=args.resolution,
        strides=tuple(sorted(set(args.strides))),
        registration_noise=args.registration_noise,
        members=args.members,
    )
    cache = None if args.no_cache else args.cache
    metrics = run(args.out, args.train, args.heldout, args.detector, options=options, cache=cache)
    print(
        f"verifier: {metrics['parameters']} parameters, held-out ROC AUC "
        f"{metrics['heldout_roc_auc']:.3f} on {metrics['heldout_windows']} windows -> {args.out}"
        + (
            f" (by fps: {metrics['heldout_roc_auc_by_fps']})"
            if len(metrics["heldout_roc_auc_by_fps"]) > 1
            else ""
        )
    )
    return 0


def _add_tracking(sub) -> None:
    p = sub.add_parser(
        "track",
        help="follow one person: Stages A-E, JSON lines, annotated video",
        description="Track one person through SOURCE (video file, image folder, quoted glob, "
        "or camera:N). Writes one JSON object per frame: {frame, mode, target: {box, score, "
        "p_human, verified, measured_by} or null, ms: {A..E}} plus event/lock_source when a "
        "lock is made, lost or re-made; boxes in the input's pixels.",
    )
    p.add_argument("source", metavar="SOURCE")
    p.add_argument(
        "--lock",
        default="auto",
        help="'auto' (lock on its own on someone walking, once the verifier accepts them, "
        "section 6.7; a person standing still is not auto-locked: tap them), X,Y[@FRAME]: "
        "operator tap at input pixel X,Y on frame FRAME (default 0), locking at once on the "
        "person under the point, or X,Y,W,H[@FRAME]: lock on exactly that box",
    )
    p.add_argument("--out", help="annotated video (e.g. annotated.mp4)")
    p.add_argument(
        "--jsonl", default="track.jsonl", help="JSON lines ('-' for stdout; default: %(default)s)"
    )
    p.add_argument("--timeline", help="also write the mode timeline PNG here (.png)")
    _add_stream_options(p)
    cli_quant.add_precision(p)
    _add_detector_mode(p)
    p.set_defaults(run=_cmd_track)


def _cmd_serve(args: argparse.Namespace) -> int:
    from emts.apps.serve import serve
    from emts.pipeline import Pipeline
    from emts.precision import model_for
    from emts.stages.e_verify import Verifier
    from emts.stages.e_verify import default_model_path as default_verifier

    follow = _gimbal_follow(args)
    verifier = None
    if not args.no_verifier and (args.verifier or default_verifier().is_file()):
        verifier = Verifier(model_for("verifier", args.verifier, args.precision, 1, args.backend))
    pipeline = Pipeline(
        _stage_c(args),
        verifier,
        auto_lock=not args.no_auto_lock,
        threads=args.threads,
        channel_config=_channel_config(args),
    )
    return serve(
        args.source,
        pipeline,
        host=args.host,
        port=args.port,
        fps=args.fps,
        loop=args.loop,
        mavlink=args.mavlink,
        follow=follow,
    )


def _add_serve(sub) -> None:
    p = sub.add_parser(
        "serve",
        help="ground-station web page: live annotated video, click to lock (needs [serve])",
        description="Track SOURCE as emts track does and serve a page on HOST:PORT: GET / the "
        "page (click the person to lock, drag a box, Unlock), GET /stream.mjpg the annotated "
        "video, GET /state the latest emts track JSON line, GET /status the run, POST /lock "
        '{"x", "y"[, "w", "h"]} in input pixels, POST /unlock. Runs until Ctrl-C.',
    )
    p.add_argument("source", metavar="SOURCE")
    p.add_argument(
        "--port",
        type=_int_in(0, 65535, " (0: any free port)"),
        default=8080,
        help="TCP port, 0 for any free one (default: %(default)s)",
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: %(default)s, this machine only; 0.0.0.0 opens "
        "the page to the network, with no authentication)",
    )
    p.add_argument("--loop", action="store_true", help="play a file source again and again")
    p.add_argument(
        "--no-auto-lock", action="store_true", help="lock only on the operator's click or box"
    )
    _add_stream_options(p)
    cli_quant.add_precision(p)
    _add_detector_mode(p)
    p.set_defaults(run=_cmd_serve)


def _cmd_eval_tracking(args: argparse.Namespace) -> int:
    _require_train_extra()
    from emts.eval import tracking
    from emts.stages.c_detect.detector import Detector
    from emts.stages.e_verify import Verifier

    out = Path(args.out)
    command = " ".join(["emts", *sys.argv[1:]])
    if args.eval_command in ("reacq", "fp"):
        _open_clip_set(args.bench if args.eval_command == "reacq" else args.fpbench)
    detector = Detector(args.model)
    if args.eval_command == "reacq":
        report = tracking.reacquisition(
            args.bench,
            detector,
            args.clips,
            appearance=not args.detections_only,
            detector_mode=args.detector_mode,
        )
        tracking.write(out, "reacq", report, command)
        rate = f"{report['success']}/{report['trials']} = {report['success_rate']:.1%}"
        errors = f"identity transfers {report['identity_transfer']}, misses {report['miss']}"
        print(f"reacquisition: {rate}; {errors}")
    elif args.eval_command == "fp":
        verifier = None if args.no_verifier else Verifier(args.verifier)
        report = tracking.false_positives(
            args.fpbench, detector, verifier, args.clips, detector_mode=args.detector_mode
        )
        tracking.write(out, "fp", report, command)
        tracking.plot_fp_sweep(report, out / "fp_sweep.png")
        for tau, row in report["fp_per_frame"].items():
            both = f"detector only {row['detector_only']}, with verifier {row['with_verifier']}"
            print(f"tau_s {tau}: FP/frame {both}")
    else:
        report = tracking.autolock(
            detector,
            Verifier(args.verifier),
            windows=args.windows,
            contrast_scale=args.contrast_scale,
            detector_mode=args.detector_mode,
            sheet=out / "autolock_longest.png",
        )
        tracking.write(out, "autolock", report, command)
        locks = f"{report['candidate_locks']} candidate locks, {report['verified_false_locks']}"
        per_hour = f"verified ({report['verified_false_locks_per_hour']}/hour)"
        print(f"auto-lock on {report['minutes']} min of person-free footage: {locks} {per_hour}")
        held, shown = report["locked_share"], report["verified_share"]
        print(f"a lock held on nothing: {held:.1%} of the frames, verified {shown:.1%}")
    print(f"report: {out}")
    return 0


def _add_training(sub) -> None:
    train = sub.add_parser("train", help="train models (needs emts[train])")
    train_sub = train.add_subparsers(dest="train_command", required=True, metavar="MODEL")
    p = train_sub.add_parser(
        "detector",
        help="train the Stage C detector",
        description="Phase 1 on Tier-2 pseudo-video from HIT-UAV stills, phase 2 on the Tier-1 / "
        "hard-negative / Tier-2 mixture (paper section 4.4). Resumes from OUT/checkpoint.pt.",
    )
    p.add_argument("--out", required=True, help="run folder (e.g. runs/detector)")
    p.add_argument("--tier1", default="data/tier1", help="Tier-1 set (default: %(default)s)")
    p.add_argument(
        "--negatives", default="data/negatives", help="negatives set (default: %(default)s)"
    )
    p.add_argument("--hituav", default="../shared/data/hit-uav", help="HIT-UAV folder for Tier 2")
    p.add_argument("--seed", type=_SEED, default=0)
    p.add_argument("--threads", type=_THREADS, default=2)
    p.add_argument(
        "--phase1-epochs", type=_INDEX, default=6, help="(default: %(default)s; paper: 4)"
    )
    p.add_argument(
        "--phase2-epochs", type=_INDEX, default=100, help="(default: %(default)s; paper: 14)"
    )
    p.add_argument(
        "--device",
        choices=["auto", "cpu", "cuda"],
        default="auto",
        help="auto: a CUDA GPU when one is present, else the CPU (default: %(default)s)",
    )
    p.add_argument(
        "--qat-from",
        metavar="RUN",
        help="quantization-aware fine-tuning (paper phase 3) of a trained detector: a run "
        "folder, its model.pt, or an ONNX detector; writes OUT/model.onnx for emts quantize",
    )
    p.add_argument(
        "--qat-epochs", type=_POSITIVE, default=4, help="QAT epochs (default: %(default)s)"
    )
    _add_train_detector_recipe(p)
    cli_quant.add_train_tsm(p)
    p.set_defaults(run=_cmd_train_detector)
    p = train_sub.add_parser(
        "verifier",
        help="train the Stage E verifier",
        description="Descriptor windows from ground-truth tracks, distractors, ground-fixed "
        "boxes and detector-proposed tracks; trains on the training sets, reports ROC AUC on the "
        "held-out sets (disjoint plates), exports OUT/verifier.onnx.",
    )
    p.add_argument("--out", required=True, help="run folder (e.g. runs/verifier)")
    p.add_argument("--train", nargs="+", default=["data/tier1", "data/negatives"])
    p.add_argument("--heldout", nargs="+", default=["data/bench", "data/fpbench"])
    p.add_argument("--detector", help="ONNX detector proposing tracks (default: the shipped one)")
    p.add_argument("--epochs", type=_POSITIVE, default=30)
    p.add_argument("--width", type=_POSITIVE, default=32, help="conv channels (default: 32)")
    p.add_argument("--hidden", type=_POSITIVE, default=32, help="head units (default: 32)")
    p.add_argument(
        "--log-eps",
        type=float,
        default=0.0,
        help="the model sees log(descriptor + EPS) (default: 0, raw descriptors)",
    )
    p.add_argument(
        "--batchnorm",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="BatchNorm after each conv while training, folded into the convs on export",
    )
    p.add_argument("--dropout", type=float, default=0.0, help="head dropout (default: 0)")
    p.add_argument("--lr", type=float, default=2e-3, help="(peak) learning rate (default: 2e-3)")
    p.add_argument("--schedule", choices=["constant", "one-cycle"], default="constant")
    p.add_argument(
        "--augment",
        nargs="*",
        choices=["scale", "mirror"],
        default=[],
        help="training augmentation: speed scaling, left-right mirror (default: none)",
    )
    p.add_argument("--seed", type=int, default=0, help="training seed (default: 0)")
    p.add_argument(
        "--members",
        type=_POSITIVE,
        default=1,
        help="train N networks (seeds SEED..SEED+N-1) and export their mean logit as one "
        "network N times as wide, block-diagonal (default: 1)",
    )
    p.add_argument(
        "--resolution",
        choices=["network", "working"],
        default="working",
        help="Stage E's input: ROI flow from Stage B's channels at the network size (the "
        "paper's) or from the 640x512 working frames (default: %(default)s)",
    )
    p.add_argument(
        "--strides",
        nargs="+",
        type=_POSITIVE,
        default=[1],
        help="windows of every k-th frame (30/k fps): each --train / --heldout set serves the "
        "largest k its clips are long enough for (17k + 1 frames: emts synth --frames); "
        "ROC AUC is reported per frame rate (default: 1)",
    )
    p.add_argument(
        "--registration-noise",
        type=float,
        default=0.0,
        metavar="PX",
        help="working resolution: offset each training clip's camera motions by N(0, PX) px "
        "(plus N(0, PX/3) per frame), the coherent residual real registration leaves on the "
        "ground (default: 0; held-out windows never)",
    )
    p.add_argument(
        "--cache",
        default="runs/verifier-windows",
        help="folder for the built descriptor windows, reused when sets, detector and Stage E "
        "configuration match (default: %(default)s)",
    )
    p.add_argument("--no-cache", action="store_true", help="build the windows afresh")
    p.set_defaults(run=_cmd_train_verifier)

    p = sub.add_parser(
        "ensemble",
        help="average several trained detectors in one ONNX graph (needs emts[train])",
        description="Put detector ONNX files side by side behind one input: heatmap, log-size "
        "and offset averaged, the first member's embedding (emts.train.ensemble). The result runs "
        "wherever a detector does (--model). Measured in the README ('Ensembles', Detector): "
        "better detection AP on real footage, worse tracking with Stage D as tuned.",
    )
    p.add_argument("models", nargs="+", help="detector .onnx files (or 'thermal'), two or more")
    p.add_argument("--out", required=True, help="the ensemble's ONNX file")
    p.set_defaults(run=_cmd_ensemble)

    p = sub.add_parser("export", help="export a trained detector to ONNX (needs emts[train])")
    p.add_argument("model", help="model.pt of a training run (or a detector .onnx to reshape)")
    p.add_argument("--out", default="detector.onnx", help="ONNX file (default: %(default)s)")
    p.add_argument(
        "--any-size",
        action="store_true",
        help="leave the input's height and width open, so that --network-size can run it at "
        "other sizes (default: fixed at the size it was trained at, which the runtime uses)",
    )
    p.add_argument(
        "--fit-box-scale",
        nargs="+",
        type=_size,
        metavar="WxH",
        default=[],
        help="with --any-size: fit, per network size, the factor that brings the boxes to the "
        "persons' size on HIT-UAV train pseudo-clips and record it in the model (a network "
        "run larger than it was trained at draws its boxes too small)",
    )
    p.add_argument(
        "--hituav",
        default="../shared/data/hit-uav",
        help="HIT-UAV folder for --fit-box-scale (default: %(default)s)",
    )
    p.add_argument(
        "--run-size",
        type=_size,
        metavar="WxH",
        help="with --any-size: the network size the runtime runs the model at when none is "
        "asked for (the thermal model: 512x384); left out, a reshaped .onnx keeps its own and "
        "a new export runs at the size it was trained at",
    )
    p.add_argument(
        "--residual-reference",
        type=float,
        metavar="LEVEL",
        help="record the residual level (R's 90th percentile) the runtime scales louder "
        "frames down to before this model (a reshaped .onnx keeps its own; 0 removes it; "
        "without one: the level of its Stage B warp, 0.0095 for the paper's -- the sets the "
        "shipped models were trained on -- and 0.0067 for working)",
    )
    p.add_argument(
        "--stage-b",
        choices=[w for w in STAGE_B_WARP if w != AUTO],
        help="record Stage B's warp the runtime runs this model with: paper (the paper's, "
        "also when none is recorded) or working (both 640x512 frames resampled alike; the "
        "thermal model's) (a reshaped .onnx keeps its own)",
    )
    p.add_argument(
        "--residual-baseline",
        type=int,
        metavar="N",
        help="record the frames R spans for this model, as it was trained (emts train "
        "detector --residual-baseline; default: what the run folder's metrics.json says for "
        "a model.pt, 1 -- eq. 2 -- when nothing says; a reshaped .onnx keeps its own)",
    )
    p.add_argument(
        "--mirror-average",
        choices=["on", "off"],
        help="record whether the runtime averages the model's heatmap with that of the "
        "mirrored frame (on: fewer false positives on real thermal stills, about twice the "
        "network's time; README, Mirrored samples); left out, a reshaped .onnx keeps its own "
        "and a new export records none (off); ONNX only: LiteRT files carry no metadata",
    )
    p.set_defaults(run=_cmd_export)

    p = sub.add_parser(
        "detect",
        help="run Stages A-C and write detections as JSON lines",
        description="One JSON object per frame: {frame, detections: [{box: [x, y, w, h], score}]} "
        "(plus detector: default|thermal on the frame where --model auto picked it) "
        "in the input's pixels. SOURCE as for emts channels. On colour frames each box is "
        "fitted to the person's own pixels (their shadow left out) and scores 0.1 more where "
        "it fits and moves, 0.1 less where it does not move, as in emts track.",
    )
    p.add_argument("source", metavar="SOURCE")
    p.add_argument("--jsonl", required=True, help="output JSON lines ('-' for stdout)")
    p.add_argument(
        "--network-boxes",
        action="store_true",
        help="the detector's boxes and scores as the network gives them (no fit to the "
        "person's own pixels on colour frames, no motion check)",
    )
    _add_network_options(p)
    cli_quant.add_precision(p)
    _add_detector_mode(p)
    p.set_defaults(run=_cmd_detect)

    evaluate = sub.add_parser("eval", help="evaluation protocols (needs emts[train])")
    eval_sub = evaluate.add_subparsers(dest="eval_command", required=True, metavar="PROTOCOL")
    p = eval_sub.add_parser("detect", help="AP, PR curve, recall by height on the held-out bench")
    p.add_argument(
        "--bench", default="data/bench", help="held-out bench set (default: %(default)s)"
    )
    p.add_argument("--model", type=named_model, help=MODEL_HELP)
    p.add_argument("--clips", type=_POSITIVE, help="evaluate only the first N clips")
    p.add_argument("--out", default="reports/detect", help="report folder (default: %(default)s)")
    p.add_argument(
        "--detector-mode",
        choices=["plain", "temporal"],
        default="plain",
        help="plain: the network frame by frame on the sets' channels (the paper's protocol); "
        "temporal: Stage C as the pipeline runs it, each clip streamed through Stages A-C "
        "(scores averaged over time; the coarse pass where the model has one) "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--coarse-pass",
        choices=[AUTO, "off"],
        default=AUTO,
        help="with --detector-mode temporal: Stage C's coarse pass, as on emts track "
        "(default: %(default)s)",
    )
    p.set_defaults(run=_cmd_eval_detect)
    p = eval_sub.add_parser(
        "hituav", help="real HIT-UAV stills as 4-frame pseudo-clips (section 6.5)"
    )
    p.add_argument("--hituav", default="../shared/data/hit-uav", help="HIT-UAV folder")
    p.add_argument("--split", default="val", choices=["val"], help="split (default: %(default)s)")
    p.add_argument("--model", type=named_model, help=MODEL_HELP)
    p.add_argument("--out", default="reports/hituav", help="report folder (default: %(default)s)")
    p.set_defaults(run=_cmd_eval_hituav)
    _add_eval_real(eval_sub)
    _add_eval_track(eval_sub)
    _add_eval_verifier(eval_sub)
    cli_quant.add_eval_quant(eval_sub)
    p = eval_sub.add_parser(
        "reacq", help="forced-occlusion reacquisition on the bench (section 6.9)"
    )
    p.add_argument("--bench", default="data/bench")
    p.add_argument("--clips", type=_POSITIVE, help="only the first N clips")
    p.add_argument("--model", type=named_model, help=MODEL_HELP)
    p.add_argument(
        "--detections-only",
        action="store_true",
        help="Stage D without its appearance measurement (the paper's tracker)",
    )
    _add_detector_mode(p, ("temporal", "plain"), network_size=False)
    p.add_argument("--out", default="reports/tracking")
    p.set_defaults(run=_cmd_eval_tracking)
    p = eval_sub.add_parser("fp", help="FP/frame on the person-free bench, with/without verifier")
    p.add_argument("--fpbench", default="data/fpbench")
    p.add_argument("--clips", type=_POSITIVE, help="only the first N clips")
    p.add_argument("--model", type=named_model, help=MODEL_HELP)
    p.add_argument("--verifier", help="ONNX verifier (default: the shipped model)")
    p.add_argument("--no-verifier", action="store_true")
    _add_detector_mode(p, ("temporal", "plain"), network_size=False)
    p.add_argument("--out", default="reports/tracking")
    p.set_defaults(run=_cmd_eval_tracking)
    p = eval_sub.add_parser("autolock", help="verified false locks per hour on person-free footage")
    p.add_argument(
        "--windows", type=_POSITIVE, default=13, help="10-s windows (default: %(default)s)"
    )
    p.add_argument(
        "--contrast-scale",
        type=_POSITIVE_FLOAT,
        default=CONTRAST_SCALE,
        metavar="S",
        help="the movers' contrast, as emts synth --contrast-scale (default: %(default)s)",
    )
    p.add_argument("--model", type=named_model, help=MODEL_HELP)
    p.add_argument("--verifier", help="ONNX verifier (default: the shipped model)")
    _add_detector_mode(p, ("temporal", "plain"), network_size=False)
    p.add_argument("--out", default="reports/tracking")
    p.set_defaults(run=_cmd_eval_tracking)


def _cmd_adapt(args: argparse.Namespace) -> int:
    _require_train_extra()
    from emts.eval.track_eval import parse_span
    from emts.train.adapt import AdaptConfig, adapt_detector, read_footage

    span = parse_span(args.frames) if args.frames else None
    if args.model is not None and not Path(args.model).is_file():
        raise BadInputError(f"--model {args.model}: no such file")
    low, high = args.person_height
    if not 0 < low < high:
        raise BadInputError("--person-height: expected 0 < LO < HI")
    if args.tracks and len(args.tracks) != len(args.footage):
        raise BadInputError(f"--tracks: {len(args.tracks)} files for {len(args.footage)} footage")
    check_writable("--out", Path(args.out), folder=True)
    config = AdaptConfig(
        steps=args.steps,
        lr=args.lr,
        seed=args.seed,
        threads=args.threads,
        fps=args.fps,
        person_height=(low, high),
    )
    footage = read_footage(args.footage, span, args.fps)
    report = adapt_detector(
        footage,
        args.out,
        config,
        base_model=args.model,
        curriculum=args.curriculum,
        hituav=args.hituav,
        command="emts adapt " + " ".join(sys.argv[2:]),
        tracks=args.tracks,
        first_frame=span[0] if span else 0,
    )
    frames = sum(f["frames"] for f in report["footage"])
    print(
        f"adapted on {frames} frames in {report['seconds']} s -> {args.out}/model.onnx "
        f"(use it with --model); provenance: {args.out}/adapt.json"
    )
    return 0


def _add_adapt(sub) -> None:
    p = sub.add_parser(
        "adapt",
        help="fine-tune the detector on your own unlabelled footage (needs emts[train])",
        description="Your frames become moving plates (their real camera motion, parallax and "
        "clutter) with walkers composited in; frames without a pasted walker are hard "
        "negatives; wherever the starting model or the compensated frame difference sees "
        "something person-sized moving is ignored (it may be a real person). Replay of the "
        "synthetic curriculum and HIT-UAV, when present, keeps what the model knew. Writes "
        "OUT/model.onnx (use it with --model), adapt.json (provenance) and curves.png.",
    )
    p.add_argument("footage", nargs="+", help="videos, image folders or globs of your flights")
    p.add_argument("--out", required=True, help="run folder (e.g. runs/adapted)")
    p.add_argument(
        "--frames", metavar="A:B", help="use frames A..B of each footage (0-based, inclusive)"
    )
    p.add_argument(
        "--fps",
        type=_float_in(0.0, None, low_inclusive=False),
        default=30.0,
        help="frame rate of the footage (image folders carry none; default: %(default)s)",
    )
    p.add_argument("--model", help="starting ONNX detector (default: the shipped model)")
    p.add_argument(
        "--tracks",
        action="append",
        metavar="JSONL",
        help="pseudo-labels: `emts track --jsonl` output of a footage (one per footage, in "
        "order); verified locked targets become positives, other targets ignore regions",
    )
    p.add_argument("--steps", type=_POSITIVE, default=1500, help="(default: %(default)s)")
    p.add_argument(
        "--lr",
        type=_float_in(0.0, None, low_inclusive=False),
        default=5e-4,
        help="(default: %(default)s)",
    )
    p.add_argument(
        "--person-height",
        type=float,
        nargs=2,
        metavar=("LO", "HI"),
        default=(16.0, 110.0),
        help="pasted walkers' height range in 640x512 working px (default: 16 110)",
    )
    p.add_argument(
        "--curriculum",
        default="data",
        help="folder with the tier1/ and negatives/ sets replayed (skipped when absent; "
        "default: %(default)s)",
    )
    p.add_argument(
        "--hituav",
        default="../shared/data/hit-uav",
        help="HIT-UAV folder replayed as Tier 2 (skipped when absent; default: %(default)s)",
    )
    p.add_argument("--seed", type=_SEED, default=0)
    p.add_argument("--threads", type=_THREADS, default=2)
    p.set_defaults(run=_cmd_adapt)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="emts",
        description="EMTS: follow-me aerial person tracking on small CPUs.",
    )
    parser.add_argument("--version", action="version", version=f"emts {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "channels",
        help="Stages A+B: ego-motion JSONL and a video of the L, R, D channels",
        description="Estimate camera ego-motion (Stage A) and form the motion channels "
        "(Stage B) for every frame. SOURCE is a video file, a folder of images (sorted by "
        "name), a glob pattern in quotes, or a camera (camera:N, or N when no file or folder "
        "of that name exists).",
    )
    p.add_argument("source", metavar="SOURCE")
    p.add_argument("--out", default="channels.mp4", help="channel video (default: %(default)s)")
    p.add_argument("--no-video", action="store_true", help="do not write the channel video")
    p.add_argument(
        "--jsonl",
        default="ego.jsonl",
        help="one JSON object per frame: M (input px, frame i-1 -> i), method, tracks, "
        "inlier_ratio, H (the homography Stage B warped by, input px; null: it used M); "
        "'-' for stdout (default: %(default)s)",
    )
    p.add_argument(
        "--no-ego",
        action="store_true",
        help="skip ego-motion compensation in the channels (identity warp; ablation)",
    )
    p.add_argument(
        "--model",
        type=input_model,
        default=False,
        help="show the channels as this detector is fed them (its network size, Stage B warp "
        "and R span, after its residual-level normalization), the network's heatmap, and "
        "the detections emts detect reports at --threshold: auto (picked by the frames, as "
        "emts track does), default, thermal, or an ONNX file (default: no detector; eq. 2's "
        "channels at 256x192)",
    )
    p.add_argument(
        "--threshold",
        type=_PROBABILITY,
        default=0.3,
        help="with --model: detection score tau_s in [0, 1] (default: %(default)s)",
    )
    _add_fps(p)
    p.set_defaults(run=_cmd_channels)

    p = sub.add_parser(
        "bench",
        help="per-stage latency at 640x512 input",
        description="Time each runtime stage (median and p90 ms/frame) on a gusty clip over "
        "a real aerial still at 640x512. The total is timed end to end per frame.",
    )
    p.add_argument("--json", metavar="OUT", help="also write the report as JSON")
    _add_threads(p)
    p.add_argument(
        "--frames",
        type=_int_in(1, MAX_BENCH_FRAMES),
        default=300,
        help=f"timed frames, 1..{MAX_BENCH_FRAMES} (default: %(default)s)",
    )
    p.add_argument(
        "--warmup",
        type=_int_in(0, MAX_BENCH_WARMUP),
        default=30,
        help=f"untimed frames first, 0..{MAX_BENCH_WARMUP} (default: %(default)s)",
    )
    p.add_argument(
        "--pace",
        type=_FPS,
        metavar="FPS",
        help="feed the frames at FPS as a live camera does, the pipeline idle in between "
        "(an idle CPU is slower to start a frame); default: back to back",
    )
    p.add_argument("--model", type=named_model, help=f"{MODEL_HELP}; timed as stage C")
    cli_quant.add_precision(p)
    _add_detector_mode(p)
    cli_quant.add_peer(p)
    p.set_defaults(run=_cmd_bench)

    p = sub.add_parser(
        "demo",
        help="end-to-end tracking demo on a generated clip (the README's main job)",
        description="Render a person-following drone over a real HIT-UAV still from a held-out "
        "plate block (a person walking behind a tree, a dog, a wind gust), tap the person at "
        "frame 5, track with the shipped models, and write the input and annotated videos, the "
        "JSON lines, the mode timeline, the channels figure and a summary against the truth.",
    )
    p.add_argument("--out-dir", default="emts-demo", help="output folder (default: %(default)s)")
    p.add_argument(
        "--frames",
        type=_int_in(1, MAX_DEMO_FRAMES),
        default=150,
        help=f"clip length, tap frame + 1 (6) to {MAX_DEMO_FRAMES} (default: %(default)s)",
    )
    p.add_argument("--seed", type=_SEED, default=0, help="random seed (default: %(default)s)")
    p.set_defaults(run=_cmd_demo)

    _add_tracking(sub)
    _add_serve(sub)
    _add_synth(sub)
    _add_training(sub)
    _add_adapt(sub)
    cli_quant.add_quantize(sub)
    cli_quant.add_export_litert(sub)
    return parser


def _quiet_opencv() -> None:
    """Keep OpenCV's and FFmpeg's own console chatter out of our one-line errors."""
    import cv2

    os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")  # AV_LOG_QUIET
    cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_ERROR)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the program is, so every ``finally`` runs (writers
    are closed, the mp4 gets its index, the timeline is drawn) exactly as on Ctrl-C."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum: int, _frame) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def _signals_end_like_ctrl_c() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into :class:`Terminated` while the command runs."""
    previous = {}
    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)  # no SIGHUP on Windows
        if number is None:
            continue
        # ValueError: not the main thread (an embedding application): leave its handlers
        with contextlib.suppress(ValueError):
            previous[number] = signal.signal(number, _raise_terminated)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        format="emts: %(levelname)s: %(message)s",
        level=logging.INFO if args.verbose else logging.WARNING,
    )
    if not args.verbose:
        _quiet_opencv()
    try:
        with _signals_end_like_ctrl_c():
            return args.run(args)
    except EmtsError as error:
        print(f"emts: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as stop:
        signum = stop.signum if isinstance(stop, Terminated) else signal.SIGINT
        name = signal.Signals(signum).name
        print(f"emts: interrupted ({name}); results written so far are kept", file=sys.stderr)
        return 128 + int(signum)
    except BrokenPipeError:  # e.g. `emts channels clip.mp4 --jsonl - | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as error:  # a disk that fills up or goes away mid-run
        where = f"{error.filename}: " if error.filename else ""
        print(f"emts: error: {where}{error.strerror or error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
