"""``emts eval verifier``: person and ground windows on a labelled clip, every model alike."""

import json

import numpy as np
import pytest
from tests.test_eval_track import _clip

from emts.errors import BadInputError
from emts.eval.verifier_real import VerifierRealConfig, evaluate_verifier_real, write_report
from emts.stages.e_verify import default_model_path


def test_windows_per_stride_and_models_scored_alike(tmp_path):
    frames, truth = _clip(36)
    models = {"shipped": None, "same": default_model_path()}
    report = evaluate_verifier_real(frames, truth, models, VerifierRealConfig(fps=30))
    # windows start on frames 0, 4, ..., 20 (16 frames each within 36); a ground box on each
    # side of the person on each of them, all inside the 320x256 view
    assert report["windows"] == {"person": 6, "ground": 12}
    shipped, same = report["models"]["shipped"], report["models"]["same"]
    assert {k: v for k, v in shipped.items() if k != "path"} == {
        k: v for k, v in same.items() if k != "path"
    }
    assert 0.0 <= shipped["roc_auc_person_vs_ground"] <= 1.0
    write_report(report, tmp_path, "emts eval verifier clip", "clip")
    assert json.loads((tmp_path / "report.json").read_text())["windows"]["person"] == 6
    assert (tmp_path / "p_human.png").stat().st_size > 0
    assert "| shipped |" in (tmp_path / "report.md").read_text()


def test_ground_boxes_that_leave_the_view_are_dropped():
    frames, truth = _clip(36)
    # offset 12 widths: the right-hand box (x ~ 100 + 120) pans left with the ground and stays;
    # the left-hand one starts outside the view
    report = evaluate_verifier_real(
        frames, truth, {"shipped": None}, VerifierRealConfig(fps=30, offset=12)
    )
    assert report["windows"] == {"person": 6, "ground": 6}


def test_a_clip_without_labelled_runs_is_bad_input():
    frames, truth = _clip(36)
    truth[::10] = np.nan  # never 16 labelled frames in a row
    with pytest.raises(BadInputError):
        evaluate_verifier_real(frames, truth, {"shipped": None}, VerifierRealConfig(fps=30))


def test_the_report_records_the_frame_rate_stage_e_saw():
    frames, truth = _clip(36)
    report = evaluate_verifier_real(frames, truth, {"shipped": None}, VerifierRealConfig(fps=10))
    assert report["fps"] == 10
