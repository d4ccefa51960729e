"""The ``emts`` command (argparse only): :mod:`.entry` builds the parser and runs a command; one
module per command group mounts its commands -- :mod:`.detect` (channels, detect), :mod:`.bench`
(bench, demo), :mod:`.track` (track, serve), :mod:`.synth`, :mod:`.train` (train, adapt),
:mod:`.export` (export, ensemble, quantize, export-litert), :mod:`.evaluate` and
:mod:`.evaluate_tracking` (eval) -- on the options they share (:mod:`.common`). The jobs themselves
are in :mod:`emts.apps`, :mod:`emts.train` and :mod:`emts.eval`, imported when a command runs."""

from emts.cli.entry import build_parser, main

__all__ = ["build_parser", "main"]
