"""``emts ablate``: the arguments; the study is :mod:`emts.eval.ablation` (variants, training,
scoring), run as Ray tasks by :mod:`emts.eval.ablation_sweep` -- imported when it runs (it
needs the train and distributed extras)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from emts.cli.common import POSITIVE, command_line, require_train_extra
from emts.errors import BadInputError
from emts.io import check_writable

# The rows emts.eval.ablation defines (ROWS; a test keeps the two lists equal): the trained
# variants, then tab:thesisablation's rows scored once.
TRAINED_ROWS = (
    "reference",
    "luminance-only",
    "pure-appearance",
    "no-ego",
    "no-tier2",
    "no-tier2-pretrain",
    "tsm-bidirectional",
    "tsm-causal",
)
THESIS_ROWS = ("deployed-int8", "classical")
RUN_FAILED = 1  # some run failed (its reason is in the table); the others were finished


def parse_seeds(text: str) -> list[int]:
    """``0,1,2`` or ``0-2`` -> [0, 1, 2]."""
    seeds: list[int] = []
    try:
        for part in text.split(","):
            low, dash, high = part.strip().partition("-")
            seeds += list(range(int(low), int(high) + 1)) if dash else [int(low)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected seeds like 0,1,2 or 0-2") from None
    if not seeds or min(seeds) < 0 or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"{text!r}: expected distinct seeds >= 0")
    return seeds


def _rows(args: argparse.Namespace) -> list[str]:
    names = [n.strip() for item in args.variants or TRAINED_ROWS for n in item.split(",")]
    unknown = [n for n in names if n not in TRAINED_ROWS + THESIS_ROWS]
    if unknown:
        raise BadInputError(
            f"--variants {unknown[0]}: unknown; choose from {', '.join(TRAINED_ROWS + THESIS_ROWS)}"
        )
    if not args.no_thesis_rows:
        names += [n for n in THESIS_ROWS if n not in names]
    if "reference" not in names and any(n in TRAINED_ROWS for n in names):
        names.insert(0, "reference")  # every delta is taken against it (or against its base)
    if "luminance-only" in names and "tsm-bidirectional" not in names:
        names.append("tsm-bidirectional")  # luminance-only's one-factor base
    return list(dict.fromkeys(names))


def _report_only(specs, out: Path, quiet: bool) -> int:
    """The table of the finished runs among ``specs``; nothing is trained or scored."""
    from emts.eval.ablation_report import write_report
    from emts.eval.ablation_sweep import done_result

    finished = [r for r in (done_result(s) for s in specs) if r is not None]
    written = write_report(out, finished, specs, command_line())
    if not quiet:
        print(
            f"emts ablate --report-only: {len(finished)} of {len(specs)} runs finished "
            f"(the rest are listed as not run); wrote {', '.join(map(str, written))}",
            file=sys.stderr,
        )
    return 0


def _cmd_ablate(args: argparse.Namespace) -> int:
    from emts.apps.batch import import_ray

    if not args.report_only:
        import_ray("emts ablate")  # one line naming the extra, before anything else
    require_train_extra()
    from emts.eval.ablation import ROWS, DataPaths, Protocol
    from emts.eval.ablation_sweep import carry_results, done_result, plan, run_sweep

    rows = _rows(args)
    out = Path(args.out)
    check_writable("--out", out, folder=True)
    data = DataPaths(
        *(
            str(Path(p).absolute())
            for p in (args.tier1, args.negatives, args.hituav, args.bench, args.person12)
        )
    )
    if not args.report_only:
        data.check([ROWS[r] for r in rows])
    limit = args.eval_limit
    protocol = (
        Protocol()
        if limit is None
        else Protocol(bench_clips=limit, hituav_images=limit, person12_frames=limit, hituav_seeds=1)
    )
    quiet = getattr(args, "quiet", False)
    specs = plan(out, rows, args.seeds, args.steps, args.cpus_per_run, protocol)
    if args.results_from:
        sources = [Path(p) for p in args.results_from]
        carried = carry_results(specs, sources)
        if not quiet:
            done = {s: done_result(s) is not None for s in carried}
            finished = [s.label for s in carried if done[s]]
            started = [s.label for s in carried if not done[s]]
            print(
                f"emts ablate: {len(finished)} finished runs carried from "
                f"{', '.join(map(str, sources))} ({', '.join(finished) or 'none'})"
                + (f"; from its checkpoints: {', '.join(started)}" if started else ""),
                file=sys.stderr,
            )
    if args.report_only:
        return _report_only(specs, out, quiet)
    if not quiet and (args.steps is not None or limit is not None):
        print(
            "emts ablate: --steps/--eval-limit given: a smoke run of the machinery, NOT the "
            "study (its table says so)",
            file=sys.stderr,
        )
    result = run_sweep(
        specs,
        data,
        out,
        address=args.address,
        cpus_per_run=args.cpus_per_run,
        quiet=quiet,
        command=command_line(),
    )
    if not quiet:
        done = len(result.rows) - result.failed
        print(
            f"{done} of {len(specs)} runs done, {result.failed} failed, in {result.seconds:.0f} s;"
            f" wrote {', '.join(str(p) for p in result.report)}",
            file=sys.stderr,
        )
    return RUN_FAILED if result.failed else 0


def add_ablate(sub) -> None:
    p = sub.add_parser(
        "ablate",
        help="the paper's ablation study (tab:archablation) as Ray tasks (needs emts[train] "
        "and emts[distributed])",
        description="Train every requested variant from scratch with the shipped recipe (one "
        "factor changed) once per seed, score every run (and the shipped int8 detector and the "
        "classical baseline) on the synthetic bench, HIT-UAV val pseudo-clips and "
        "uav123-person12 with one protocol, each training and scoring a Ray task (a local Ray "
        "instance on this machine's cores, or the cluster at --address). Writes "
        "DIR/runs/ROW/seedK/result.json per run and DIR/ablation.md, ablation.json and "
        "ablation.png. A run whose result.json is there is never redone; run the command again "
        "to continue a killed sweep (trainings resume from their last checkpoint). Rows: "
        + ", ".join(TRAINED_ROWS + THESIS_ROWS)
        + " (see docs/guides/ablate.md).",
        epilog="Exit codes: 0 every run done or skipped; 1 done, but some run failed (its "
        "reason is in the table, the others were finished); 2 bad input; 128 + N ended by "
        "signal N (finished runs kept).",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="folder of the study")
    p.add_argument(
        "--variants",
        nargs="+",
        metavar="ROW",
        help="rows to run, space- or comma-separated (default: every trained variant; "
        "reference, and tsm-bidirectional for luminance-only, are added as bases)",
    )
    p.add_argument(
        "--seeds",
        type=parse_seeds,
        default=[0, 1, 2],
        metavar="LIST",
        help="training seeds, e.g. 0,1,2 or 0-2 (default: 0,1,2)",
    )
    p.add_argument(
        "--no-thesis-rows",
        action="store_true",
        help="leave out the deployed int8 detector and the classical baseline",
    )
    p.add_argument(
        "--address",
        metavar="ADDR",
        help="join the Ray cluster at ADDR (HEAD:6379, or auto) instead of starting a local "
        "instance; every node needs emts[train,distributed], the data and DIR at the same paths",
    )
    p.add_argument(
        "--cpus-per-run",
        type=POSITIVE,
        default=2,
        metavar="N",
        help="CPUs each training asks Ray for, its torch threads (default: 2, the recipe's; "
        "at most a node's); each scoring asks for one",
    )
    p.add_argument(
        "--results-from",
        nargs="+",
        metavar="JSON",
        help="earlier sweeps' ablation.json (e.g. the committed reports/ablation/"
        "ablation.json) or single runs' result.json: their finished runs with the same row, "
        "seed and protocol count as done here and are not trained again",
    )
    p.add_argument(
        "--report-only",
        action="store_true",
        help="train and score nothing: write the table from the runs already finished "
        "(here or carried with --results-from); the others are listed as not run",
    )
    p.add_argument("--tier1", default="data/tier1", help="Tier-1 set (default: %(default)s)")
    p.add_argument(
        "--negatives", default="data/negatives", help="negatives set (default: %(default)s)"
    )
    p.add_argument(
        "--hituav",
        default="../shared/data/hit-uav",
        help="HIT-UAV folder: Tier 2 (train) and scoring (val) (default: %(default)s)",
    )
    p.add_argument("--bench", default="data/bench", help="held-out bench (default: %(default)s)")
    p.add_argument(
        "--person12",
        default="../shared/data/uav123-person12",
        help="uav123-person12 folder (default: %(default)s)",
    )
    p.add_argument(
        "--steps",
        type=POSITIVE,
        metavar="N",
        help="NOT THE STUDY (tests, smoke runs): N training steps in all instead of the "
        "recipe's 11,500",
    )
    p.add_argument(
        "--eval-limit",
        type=POSITIVE,
        metavar="N",
        help="NOT THE STUDY: score N bench clips, N HIT-UAV stills (one pseudo-clip seed) and "
        "N person12 frames",
    )
    p.add_argument(  # also emts -q ablate: the top-level option
        "-q",
        "--quiet",
        action="store_true",
        default=argparse.SUPPRESS,
        help="errors only: no progress lines, bar or summary on stderr",
    )
    p.set_defaults(run=_cmd_ablate)
