"""The ``emts`` command (argparse only): :mod:`.entry` builds the parser and runs a command; one
module per command group mounts its commands -- :mod:`.detect` (channels, detect), :mod:`.bench`
(bench, demo), :mod:`.track` (track, serve), :mod:`.batch` (batch track), :mod:`.synth`,
:mod:`.train` (train, adapt), :mod:`.ablate` (ablate), :mod:`.export` (export, ensemble,
quantize, export-litert), :mod:`.evaluate` and :mod:`.evaluate_tracking` (eval) -- on the
options they share (:mod:`.common`). The jobs themselves are in :mod:`emts.apps`,
:mod:`emts.train` and :mod:`emts.eval`, imported when a command runs."""

import sys

__all__ = ["build_parser", "main"]


def main(argv: list[str] | None = None) -> int:
    """Run the ``emts`` command (:func:`emts.cli.entry.main`). Its modules are imported here,
    so that a Ctrl-C while they load (the first half second) ends in one line and exit code
    130, as a Ctrl-C during a run does, not in a traceback."""
    try:
        from emts.cli.entry import main as run

        return run(argv)
    except KeyboardInterrupt:  # a run's own Ctrl-C is handled (and said) by entry.main
        print("emts: interrupted (SIGINT) while starting; nothing was written", file=sys.stderr)
        return 130


def build_parser():
    """The ``emts`` parser (:func:`emts.cli.entry.build_parser`)."""
    from emts.cli.entry import build_parser as build

    return build()
