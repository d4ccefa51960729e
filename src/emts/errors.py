"""The project's exception types. The CLI turns any of them into one line and exit code 2."""


class EmtsError(Exception):
    """Base class of every error EMTS raises on purpose."""


class BadInputError(EmtsError, ValueError):
    """The input cannot be used: missing file, unreadable video, wrong dtype or shape, ..."""
