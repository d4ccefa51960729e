"""What the command-line tests check of a refused run (imported by the test modules)."""

from emts.cli import main


def exit_code(argv) -> int:
    """main()'s exit code, also when argparse exits by itself."""
    try:
        return main(argv)
    except SystemExit as stop:
        return stop.code


def expect_refusal(capsys, argv, fragment):
    """The run exits 2 with one line on stderr, an error that says ``fragment``."""
    assert exit_code(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("emts: error:") and fragment in err[0], err[0]
