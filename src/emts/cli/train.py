"""``emts train detector``, ``emts train verifier`` and ``emts adapt``: the arguments; the jobs
are in :mod:`emts.train` (imported when a command runs: it needs the train extra)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from emts.cli.common import (
    FPS,
    INDEX,
    POSITIVE,
    SEED,
    THREADS,
    command_line,
    float_in,
    input_model,
    int_in,
    network_size,
    open_clip_set,
    parse_size,
    require_train_extra,
)
from emts.config import WORKING_SIZE
from emts.errors import BadInputError
from emts.io import check_writable


def _cmd_train_detector(args: argparse.Namespace) -> int:
    require_train_extra()
    from emts.train.loop import TrainConfig, train_detector

    for folder in (args.tier1, args.negatives):
        if not (Path(folder) / "manifest.json").is_file():
            raise BadInputError(f"{folder}: not a clip set; generate it with emts synth")
        open_clip_set(folder)
    check_writable("--out", Path(args.out), folder=True)
    if args.tsm is not None:
        return _cmd_train_tsm(args)
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
        type=network_size,
        metavar="WxH",
        help="the detector's input size, trained and run at (default 256x192, the paper's; "
        "e.g. 384x288: people 1.5x taller in network px); multiples of 16, at least 5:4 wide, "
        "at most 640x496",
    )
    p.add_argument(
        "--crop",
        type=parse_size,
        metavar="WxH",
        help="train on random windows of this size of the --network-size channels (e.g. "
        "256x192: the per-step cost of the paper's size); default: whole frames",
    )


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


def _add_train_tsm(p: argparse.ArgumentParser) -> None:
    """``emts train detector --tsm ...``: the temporal-shift ablation variant."""
    p.add_argument(
        "--tsm",
        choices=["causal", "bidirectional", "none"],
        help="fine-tune the temporal-shift ablation detector (eq:tsm / eq:causaltsm) from "
        "--tsm-from on --tsm-frames-frame windows; writes OUT/model.onnx, the causal streaming "
        "step with its 7 caches as graph inputs/outputs (eq:statefn); none: the same "
        "fine-tuning without shift (the stateless control), a stateless OUT/model.onnx",
    )
    p.add_argument(
        "--tsm-from",
        metavar="ONNX",
        help="stateless ONNX detector to start from (default: the shipped one)",
    )
    p.add_argument("--tsm-steps", type=int, default=3000, help="(default: %(default)s)")
    p.add_argument(
        "--tsm-frames", type=int, default=8, help="frames per window (default: %(default)s)"
    )
    p.add_argument(
        "--tsm-clips", type=int, default=4, help="windows per batch (default: %(default)s)"
    )
    p.add_argument("--tsm-lr", type=float, default=5e-4, help="peak rate (default: %(default)s)")


def _cmd_train_tsm(args: argparse.Namespace) -> int:
    from emts.precision import shipped_model
    from emts.train.loop import TrainConfig
    from emts.train.tsm import finetune_tsm

    if args.tsm_steps < 1 or args.tsm_frames < 2 or args.tsm_clips < 1 or args.tsm_lr <= 0:
        raise BadInputError("--tsm-steps/--tsm-clips >= 1, --tsm-frames >= 2, --tsm-lr > 0")
    config = TrainConfig(
        seed=args.seed,
        threads=args.threads,
        batch_clips=args.tsm_clips,
        frames=args.tsm_frames,
        lr=args.tsm_lr,
        loader_workers=args.loader_workers if args.loader_workers is not None else 1,
    )
    source = args.tsm_from or shipped_model("detector", "fp32")
    report = finetune_tsm(
        source,
        args.out,
        args.tier1,
        args.negatives,
        args.tsm,
        args.tsm_steps,
        config,
        command=command_line(),
    )
    if args.tsm == "none":
        print(f"stateless control fine-tuned in {report['seconds']} s -> {args.out}/model.onnx")
        return 0
    print(
        f"TSM ({args.tsm}) fine-tuned in {report['seconds']} s -> {args.out}/model.onnx "
        f"(streaming, {report['cache_values']} cache values); study its int8 calibration "
        f"with: emts eval quant --tsm {args.out}/model.onnx"
    )
    return 0


def _cmd_train_verifier(args: argparse.Namespace) -> int:
    require_train_extra()
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


def add_train(sub) -> None:
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
    p.add_argument("--seed", type=SEED, default=0)
    p.add_argument("--threads", type=THREADS, default=2)
    p.add_argument(
        "--phase1-epochs", type=INDEX, default=6, help="(default: %(default)s; paper: 4)"
    )
    p.add_argument(
        "--phase2-epochs", type=INDEX, default=100, help="(default: %(default)s; paper: 14)"
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
        "--qat-epochs", type=POSITIVE, default=4, help="QAT epochs (default: %(default)s)"
    )
    _add_train_detector_recipe(p)
    _add_train_tsm(p)
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
    p.add_argument("--epochs", type=POSITIVE, default=30)
    p.add_argument("--width", type=POSITIVE, default=32, help="conv channels (default: 32)")
    p.add_argument("--hidden", type=POSITIVE, default=32, help="head units (default: 32)")
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
    p.add_argument(
        "--lr", type=LEARNING_RATE, default=2e-3, help="(peak) learning rate (default: 2e-3)"
    )
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
        type=POSITIVE,
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
        type=POSITIVE,
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


def _cmd_adapt(args: argparse.Namespace) -> int:
    require_train_extra()
    from emts.eval.track_eval import parse_span
    from emts.modality import AUTO
    from emts.train.adapt import AdaptConfig, adapt_detector, read_footage
    from emts.train.loop import CHECKPOINT

    span = parse_span(args.frames) if args.frames else None
    model = input_model(args.model)  # (the text kept for the command line adapt.json records)
    if model not in (None, AUTO) and not Path(model).is_file():
        raise BadInputError(f"--model {args.model}: no such file")
    low, high = args.person_height
    tallest = WORKING_SIZE[1]  # a walker taller than the working frame is never pasted whole
    if not 0 < low < high <= tallest:
        raise BadInputError(f"--person-height: expected 0 < LO < HI <= {tallest} (working px)")
    if args.tracks and len(args.tracks) != len(args.footage):
        raise BadInputError(f"--tracks: {len(args.tracks)} files for {len(args.footage)} footage")
    out = Path(args.out)
    check_writable("--out", out, folder=True)
    if (
        args.model not in (None, AUTO)
        and (out / "model.onnx").resolve() == Path(args.model).resolve()
    ):
        raise BadInputError(
            f"--model {args.model} is the model this run writes ({out}/model.onnx); "
            "choose another --out"
        )
    if args.resume and not (out / CHECKPOINT).is_file():
        raise BadInputError(f"--resume: {out / CHECKPOINT} not found: nothing to resume")
    config = AdaptConfig(
        steps=args.steps,
        lr=args.lr,
        seed=args.seed,
        threads=args.threads,
        fps=args.fps,
        person_height=(low, high),
    )
    import cv2

    # no OpenCV thread pool in this process, from its first frame on: the batch loader is
    # forked from it (see emts.train.adapt.adapt_detector)
    cv2.setNumThreads(1)
    footage = read_footage(args.footage, span, args.fps)
    report = adapt_detector(
        footage,
        out,
        config,
        base_model=model,
        curriculum=args.curriculum,
        hituav=args.hituav,
        command=_adapt_command(args),
        tracks=args.tracks,
        first_frame=span[0] if span else 0,
        resume=args.resume,
    )
    frames = sum(f["frames"] for f in report["footage"])
    print(
        f"adapted {Path(report['base_model']).name} on {frames} frames in "
        f"{report['seconds']} s ({report['steps_done']} steps) -> {out}/model.onnx "
        f"(use it with --model); provenance: {out}/adapt.json"
    )
    return 0


# emts.train.adapt.DEFAULT_STEPS (the train package needs torch: not imported to build the
# parser; a test checks the two agree)
ADAPT_STEPS = 300
MAX_ADAPT_STEPS = 100_000  # about a day on 2 cores; more is a typo, not a run
# a learning rate: a finite number in (0, 1] (more diverges; 1e300 overflows torch's float)
LEARNING_RATE = float_in(0.0, 1.0, low_inclusive=False)
_ADAPT_DEFAULTS: dict[str, object] = {}  # emts adapt's option defaults (filled by add_adapt)


def _adapt_command(args: argparse.Namespace) -> str:
    """The command line of this run (the options that differ from their defaults), for
    adapt.json and the line that says how to resume it."""
    import shlex

    words = ["emts", "adapt", *args.footage, "--out", args.out]
    for dest, default in _ADAPT_DEFAULTS.items():
        value = getattr(args, dest, default)
        if dest in ("footage", "out", "help", "resume") or value == default:
            continue
        flag = "--" + dest.replace("_", "-")
        if isinstance(value, bool):
            words.append(flag)
        elif dest == "tracks":
            words += [w for path in value for w in (flag, path)]
        elif isinstance(value, (list, tuple)):
            words += [flag, *(f"{v:g}" if isinstance(v, float) else str(v) for v in value)]
        else:
            words += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    if args.resume:
        words.append("--resume")
    return shlex.join(words)


def add_adapt(sub) -> None:
    from emts.modality import AUTO

    p = sub.add_parser(
        "adapt",
        help="fine-tune the detector on your own unlabelled footage (needs emts[train])",
        description="Your frames become moving plates (their real camera motion, parallax and "
        "clutter) with walkers composited in; frames without a pasted walker are hard "
        "negatives; wherever the starting model or the compensated frame difference sees "
        "something person-sized moving is ignored (it may be a real person). Replay of the "
        "synthetic curriculum and HIT-UAV, when present, keeps what the model knew (a warning "
        "says when none is found). Writes OUT/model.onnx (use it with --model), adapt.json "
        "(provenance), curves.png and checkpoint.pt. The default run (300 steps) takes 3-8 "
        "minutes of training on 2 cores (3.1 measured; 7 at the slowest step seen), plus ~30 s "
        "per 1,000 footage frames at 640x360 (--frames A:B limits them); on a real RGB clip it "
        "raised "
        "the detector's recall 0.67 -> 0.89 at 5x the false positives (docs/guides/training.md; "
        "a thermal run is not measured). Ctrl-C or SIGTERM keeps the steps done so far "
        "(model.onnx, marked partial in adapt.json); the same command with --resume continues "
        "to the same final step.",
    )
    p.add_argument("footage", nargs="+", help="videos, image folders or globs of your flights")
    p.add_argument(
        "--out",
        required=True,
        help="run folder (e.g. runs/adapted); one holding this run's checkpoint.pt resumes it",
    )
    p.add_argument(
        "--frames", metavar="A:B", help="use frames A..B of each footage (0-based, inclusive)"
    )
    p.add_argument(
        "--fps",
        type=FPS,
        default=30.0,
        help="frame rate of the footage (image folders carry none; default: %(default)s)",
    )
    p.add_argument(
        "--model",
        default=AUTO,
        help="starting detector: auto = the shipped model that suits the footage (the thermal "
        "model for footage without colour: uint16, single-channel, or equal B, G, R), default, "
        "thermal, or an ONNX file (default: %(default)s)",
    )
    p.add_argument(
        "--tracks",
        action="append",
        metavar="JSONL",
        help="pseudo-labels: `emts track --jsonl` output of a footage (one per footage, in "
        "order); verified locked targets become positives, other targets ignore regions",
    )
    p.add_argument(
        "--steps",
        type=int_in(1, MAX_ADAPT_STEPS),
        default=ADAPT_STEPS,
        help="training steps of 8 clips x 4 frames: 0.5-1.4 s each on 2 cores (idle to "
        "loaded); more steps fit your footage more closely, with more risk of forgetting "
        "(1500, the earlier default: 23 min; default: %(default)s)",
    )
    p.add_argument(
        "--lr",
        type=LEARNING_RATE,
        default=5e-4,
        help="peak learning rate of AdamW, decayed to 0 on a cosine over --steps "
        "(default: %(default)s)",
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
    p.add_argument(
        "--seed",
        type=SEED,
        default=0,
        help="seed of the samples drawn and the walkers pasted (default: %(default)s)",
    )
    p.add_argument(
        "--threads",
        type=THREADS,
        default=2,
        help="torch and onnxruntime threads (a batch loader process runs beside them; "
        "default: %(default)s)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run OUT/checkpoint.pt holds (stopped by Ctrl-C or SIGTERM) to its "
        "final step; the other options must be the stopped run's (running the same command "
        "without --resume continues it too)",
    )
    _ADAPT_DEFAULTS.update({a.dest: a.default for a in p._actions})
    p.set_defaults(run=_cmd_adapt)
