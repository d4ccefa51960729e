"""benchmarks/native_share.py: a wrapped call is timed only while active and charged to the
stage of the module that makes it."""

import sys
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
native_share = pytest.importorskip("native_share")


def _caller(module_name: str, function):
    """A function defined in a module named ``module_name`` that calls ``function``."""
    module = types.ModuleType(module_name)
    exec("def call(f):\n    return f(2)\n", module.__dict__)
    return lambda: module.call(function)


def test_calls_are_charged_to_the_calling_modules_stage_only_while_active():
    timer = native_share.CallTimer()
    square = timer.wrap(lambda x: x * x, "square")
    from_tracker = _caller("emts.stages.d_track.tracker", square)
    from_ego_motion = _caller("emts.stages.a_ego_motion", square)
    assert from_tracker() == 4  # inactive: not counted
    assert not timer.calls
    timer.active = True
    from_tracker()
    from_tracker()
    from_ego_motion()
    _caller("somewhere.else", square)()
    timer.active = False
    from_ego_motion()
    assert timer.calls == {("D", "square"): 2, ("A", "square"): 1, ("?", "square"): 1}
    assert all(seconds >= 0 for seconds in timer.seconds.values())


def test_an_exception_is_still_timed_and_raised():
    timer = native_share.CallTimer()
    timer.active = True

    def fails(_):
        raise ValueError("bad")

    with pytest.raises(ValueError):
        _caller("emts.stages.e_verify", timer.wrap(fails, "fails"))()
    assert timer.calls == {("E", "fails"): 1}
