"""``emts batch track``: the arguments; the job is :mod:`emts.apps.batch` (on Ray, which only
the job imports, when it runs)."""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from emts.cli.common import (
    INCOMPLETE_INPUT,
    POSITIVE,
    add_detector_mode,
    add_network_options,
    add_precision,
    command_line,
)
from emts.io import check_writable

# Exit code of a batch that finished but where some flight failed (bad input stays 2).
FLIGHT_FAILED = 1

# What a task's pipeline is built from: emts track's options that make sense in a batch.
TRACK_OPTIONS = (
    "threshold",
    "model",
    "threads",
    "fps",
    "verifier",
    "no_verifier",
    "precision",
    "backend",
    "detector_mode",
    "network_size",
    "coarse_pass",
    "stage_b",
)


def _cmd_batch_track(args: argparse.Namespace) -> int:
    from emts.apps.batch import find_flights, import_ray, run_batch
    from emts.cli.track import _pipeline

    import_ray()  # one line naming the extra, before anything else is looked at
    out = Path(args.out)
    check_writable("--out", out, folder=True)
    flights, notes = find_flights(args.sources)
    quiet = getattr(args, "quiet", False)
    if not quiet:
        for note in notes:
            print(note, file=sys.stderr)
    options = argparse.Namespace(**{name: getattr(args, name) for name in TRACK_OPTIONS})
    make_pipeline = functools.partial(_pipeline, options, auto_lock=True)
    make_pipeline()  # a bad --model or --verifier: one line here, not one failure per flight
    result = run_batch(
        flights,
        out,
        make_pipeline,
        fps=args.fps,
        workers=args.workers,
        threads=args.threads,
        address=args.address,
        force=args.force,
        quiet=quiet,
        command=command_line(),
    )
    if not quiet:
        said = ", ".join(f"{n} {s}" for s, n in _tally(result.rows).items())
        md, js = result.table
        flights = f"{len(result.rows)} flight" + ("" if len(result.rows) == 1 else "s")
        print(f"{flights}: {said}; wrote {md}, {js}", file=sys.stderr)
    if result.failed:
        return FLIGHT_FAILED
    return INCOMPLETE_INPUT if result.incomplete else 0


def _tally(rows: list[dict]) -> dict[str, int]:
    from emts.apps.batch import counts

    return counts(rows)


def add_batch(sub) -> None:
    """``emts batch`` and its jobs (``track``)."""
    batch = sub.add_parser(
        "batch", help="run a job over many flights as Ray tasks (needs emts[distributed])"
    )
    jobs = batch.add_subparsers(dest="batch_command", required=True, metavar="JOB")
    p = jobs.add_parser(
        "track",
        help="emts track --lock auto over many videos, one Ray task per flight",
        description="Track every flight of VIDEOS_OR_FOLDERS as emts track --lock auto does, "
        "each flight a Ray task (a local Ray instance on this machine's cores, or the cluster "
        "at --address). A folder expands to the videos in it, or is one flight if it holds "
        "images and no video. Writes under --out, per flight NAME.jsonl (emts track's JSON "
        "lines, flushed per frame) and NAME.summary.json (NAME: the video's stem, the folder "
        "in front where two share one), and batch.md and batch.json, a table of every flight. "
        "A flight done earlier (its summary and whole JSON lines there) is skipped; one "
        "without its summary (a killed run) is redone. Needs emts[distributed].",
        epilog="Exit codes: 0 every flight done or skipped; 1 done, but some flight failed "
        "(unreadable or corrupt: its reason is in the table, the others were finished); 2 bad "
        "input (one line, nothing started); 3 done, but some video ended before its declared "
        "frame count; 128 + N ended by signal N (the flights finished so far are kept).",
    )
    p.add_argument(
        "sources",
        nargs="+",
        metavar="VIDEOS_OR_FOLDERS",
        help="video files, folders of videos, or image-sequence folders",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="folder of the results")
    p.add_argument(
        "--address",
        metavar="ADDR",
        help="join the Ray cluster at ADDR (HEAD:6379, or auto) instead of starting a local "
        "instance; every node needs emts[distributed], and the videos and DIR at the same paths",
    )
    p.add_argument(
        "--workers",
        type=POSITIVE,
        metavar="N",
        help="flights tracked at a time (default: the CPUs of the machine or cluster divided "
        "by --threads)",
    )
    p.add_argument("--force", action="store_true", help="redo flights done earlier too")
    p.add_argument(  # also emts -q batch track: the top-level option
        "-q",
        "--quiet",
        action="store_true",
        default=argparse.SUPPRESS,
        help="errors only: no progress lines, bar or summary on stderr",
    )
    add_network_options(p)
    p.add_argument("--verifier", help="ONNX verifier (default: the shipped model)")
    p.add_argument("--no-verifier", action="store_true", help="run without Stage E")
    add_precision(p)
    add_detector_mode(p)
    p.set_defaults(run=_cmd_batch_track, threads=1)
