"""``emts synth``: generate the synthetic curriculum's clip sets (:mod:`emts.synth`), look at
them, export clips."""

from __future__ import annotations

import argparse
from pathlib import Path

from emts.cli.common import (
    CLIP_FRAMES,
    INDEX,
    POSITIVE,
    POSITIVE_FLOAT,
    PROBABILITY,
    SEED,
    THREADS,
    open_clip_set,
)
from emts.errors import BadInputError
from emts.io import check_outputs, check_png, check_writable
from emts.synth.common import CONTRAST_SCALE


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
        hard_shade=args.hard_shade,
    )
    print(
        f"{manifest['clips']} clips, {manifest['frames']} frames in {manifest['seconds']} s "
        f"({manifest['frames_per_second']} frames/s), "
        f"{manifest['bytes'] / 1e6:.1f} MB -> {args.out}"
    )
    return 0


def _cmd_synth_preview(args: argparse.Namespace) -> int:
    from emts.synth.preview import contact_sheet

    if len(open_clip_set(args.folder)) == 0:
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

    clip_set = open_clip_set(args.folder)
    check_writable("OUT", Path(args.out), folder=True)
    if args.clip not in clip_set.indices:
        raise BadInputError(f"{args.folder}: no clip {args.clip}")
    print(export_clip(args.folder, args.out, args.clip))
    return 0


def add_synth(sub) -> None:
    from emts.synth.clips import TIER1_FRAMES
    from emts.synth.common import SETS

    synth = sub.add_parser(
        "synth",
        help="generate and inspect the synthetic motion curriculum",
        description="Generate clip sets of the synthetic motion curriculum (paper section 4), "
        "look at them, and export clips as image folders. The on-disk format is described in "
        "docs/guides/training.md.",
    )
    synth_sub = synth.add_subparsers(dest="synth_command", required=True, metavar="SET|ACTION")
    for name, kind in SETS.items():
        p = synth_sub.add_parser(name, help=f"{kind.description} (default {kind.default_clips})")
        p.add_argument("--out", required=True, help="output folder")
        p.add_argument(
            "--clips", type=POSITIVE, help=f"number of clips (default {kind.default_clips})"
        )
        p.add_argument("--seed", type=SEED, default=0, help="base seed (default: %(default)s)")
        p.add_argument(
            "--frames",
            type=CLIP_FRAMES,
            default=TIER1_FRAMES,
            help="frames per clip at 30 fps (default: %(default)s, the paper's); longer clips "
            "give Stage E windows at lower frame rates (emts train verifier --strides)",
        )
        p.add_argument(
            "--mesh-walkers",
            type=PROBABILITY,
            default=0.0,
            metavar="P",
            help="share of persons drawn as posed MakeHuman body meshes instead of the "
            "procedural capsule figure (default: %(default)s)",
        )
        p.add_argument(
            "--contrast-scale",
            type=POSITIVE_FLOAT,
            default=CONTRAST_SCALE,
            metavar="S",
            help="multiply every mover's contrast against its ground (persons, animals, "
            "vehicles) by S (default: %(default)s: the median person as far off its ground "
            "as real ones; 1 renders the sets made before 2026-11-27)",
        )
        p.add_argument(
            "--hard-shade",
            type=PROBABILITY,
            default=0.0,
            metavar="P",
            help="share of clips with a building's or a tree canopy's deep, hard-edged shade "
            "on the ground, darkening the people who walk through it (real shade: 15-55 %% as "
            "bright as the sunlit ground; default: %(default)s, the sets the shipped detector "
            "was trained on)",
        )
        p.add_argument(
            "--workers", type=THREADS, default=2, help="processes (default: %(default)s)"
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
    p.add_argument("--clips", type=POSITIVE, default=8, help="rows (default: %(default)s)")
    p.add_argument(
        "--frame", type=INDEX, default=9, help="frame of each clip (default: %(default)s)"
    )
    p.set_defaults(run=_cmd_synth_preview)
    p = synth_sub.add_parser("export", help="write one clip as PNG frames plus labels.json")
    p.add_argument("folder", metavar="DIR")
    p.add_argument("out", metavar="OUT")
    p.add_argument("--clip", type=INDEX, default=0, help="clip index (default: %(default)s)")
    p.set_defaults(run=_cmd_synth_export)
