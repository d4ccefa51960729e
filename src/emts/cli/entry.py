"""The ``emts`` command: the top-level parser, which mounts every command group's module, and
:func:`main`, which runs a command.

Every subcommand reports bad input (arguments, paths, files) as one line on stderr and exits
with code 2; results are streamed (JSON lines flushed per frame), and SIGINT, SIGTERM and SIGHUP
all end a run the same way -- files finished, one line, exit code 128 + the signal number -- so
an interrupted run keeps what it computed.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Iterator

from emts import __version__
from emts.cli import ablate, batch, bench, detect, evaluate, export, synth, track, train
from emts.errors import EmtsError


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``emts: error: <what>; see 'emts track --help'``."""

    def error(self, message: str):  # type: ignore[override]
        print(f"emts: error: {message}; see '{self.prog} --help'", file=sys.stderr)
        sys.exit(2)

    def _get_value(self, action, arg_string):
        """Every value given on the command line, before its type: an empty one (an unset
        shell variable, ``--jsonl "$OUT"``) names no file, folder or setting -- taken as is it
        would mean the current folder, or nothing written -- so it is refused."""
        whole = action.nargs in (argparse.PARSER, argparse.REMAINDER)  # a command's argv
        if isinstance(arg_string, str) and not arg_string.strip() and not whole:
            raise argparse.ArgumentError(action, "must not be empty (an unset variable?)")
        return super()._get_value(action, arg_string)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="emts",
        description="EMTS: follow-me aerial person tracking on small CPUs.",
        epilog="Exit codes: 0 done; 2 bad input (one line on stderr, nothing started or the "
        "results so far kept); 3 done, but a video ended before its declared frame count "
        "(truncated or damaged: every frame it gave is written, a warning and the summary say "
        "so); 128 + N ended by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP), results so far "
        "kept.",
    )
    parser.add_argument("--version", action="version", version=f"emts {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="errors only: no progress bars, warnings or summaries on stderr",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # in the order `emts --help` lists them
    detect.add_channels(sub)
    bench.add_bench(sub)
    bench.add_demo(sub)
    track.add_track(sub)
    track.add_serve(sub)
    batch.add_batch(sub)
    synth.add_synth(sub)
    train.add_train(sub)
    export.add_ensemble(sub)
    export.add_export(sub)
    detect.add_detect(sub)
    evaluate.add_eval(sub)
    ablate.add_ablate(sub)
    train.add_adapt(sub)
    export.add_quantize(sub)
    export.add_export_litert(sub)
    return parser


def _quiet_opencv() -> None:
    """Keep OpenCV's and FFmpeg's own console chatter out of our one-line errors."""
    import cv2

    os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")  # AV_LOG_QUIET
    # silent: where OpenCV fails (an image it cannot decode, a codec it cannot open) we say so
    cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_SILENT)


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


class _NotATerminal:
    """A stream that says it is no terminal (``-q``: tqdm draws no bar), writing through."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.INFO if args.verbose else logging.WARNING
    logging.basicConfig(
        format="emts: %(levelname)s: %(message)s",
        level=logging.ERROR if args.quiet else level,
    )
    # (basicConfig configures once a process; the level of emts's own logger follows -q)
    logging.getLogger("emts").setLevel(logging.ERROR if args.quiet else logging.NOTSET)
    stderr = sys.stderr
    if args.quiet:  # progress bars show on a terminal only (tqdm's disable=None)
        sys.stderr = _NotATerminal(stderr)
    try:
        return _run(args)
    finally:
        sys.stderr = stderr


def _run(args: argparse.Namespace) -> int:
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
