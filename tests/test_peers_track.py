"""benchmarks/peers_track.py: a cv2-style peer tracker behind the pipeline interface that
`emts eval track`'s scorer drives, and the one-line error without the peers' weights."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
peers_track = pytest.importorskip("peers_track")
track_eval = pytest.importorskip("emts.eval.track_eval")


class FakeCv2Tracker:
    """Records init; update answers from a script of (ok, rect)."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.inits = []

    def init(self, frame, rect):
        self.inits.append(rect)

    def update(self, frame):
        return self.answers.pop(0)


def _frame():
    return np.zeros((36, 64, 3), np.uint8)


def _peer(answers, tap_box=None):
    made = []

    def make():
        made.append(FakeCv2Tracker(answers))
        return made[-1]

    return peers_track.PeerTracker(make, "fake", tap_box=tap_box), made


def test_the_lock_frame_calls_init_with_the_given_box_and_reports_it_locked():
    peer, made = _peer([])
    assert peer.step(_frame()).mode == "search"
    peer.lock(20.0, 15.0, box=(10.4, 5.6, 17.2, 42.5))
    result = peer.step(_frame())
    assert made[0].inits == [(10, 6, 17, 42)]
    assert result.mode == "locked" and result.event == "lock"
    assert result.target.box == (10.4, 5.6, 17.2, 42.5)


def test_a_tap_without_a_box_locks_on_the_tap_box_and_without_one_refuses():
    peer, made = _peer([], tap_box=(1.0, 2.0, 3.0, 4.0))
    peer.lock(2.5, 4.0)
    peer.step(_frame())
    assert made[0].inits == [(1, 2, 3, 4)]
    with pytest.raises(ValueError, match="needs a box"):
        _peer([])[0].lock(2.5, 4.0)


def test_a_lost_update_is_reacquire_without_a_box_and_a_later_ok_is_a_relock():
    peer, _ = _peer([(True, (11, 6, 17, 42)), (False, (11, 6, 17, 42)), (True, (12, 6, 17, 42))])
    peer.lock(0, 0, box=(10, 5, 17, 42))
    peer.step(_frame())
    results = [peer.step(_frame()) for _ in range(3)]
    assert [r.mode for r in results] == ["locked", "reacquire", "locked"]
    assert [r.event for r in results] == [None, "lost", "relock"]
    assert results[1].target is None
    assert results[2].target.box == (12.0, 6.0, 17.0, 42.0)


def test_the_scorer_counts_no_hit_on_a_lost_frame_even_on_the_person():
    """Through evaluate_track: a loss right on the person is neither a hit nor a false lock."""
    truth = np.array([[10.0, 5.0, 17.0, 25.0]] * 4)
    rect = (10, 5, 17, 25)
    peer, _ = _peer([(True, rect), (False, rect), (True, rect)])
    frames = [_frame() for _ in range(4)]
    config = track_eval.TrackEvalConfig(lock_box=tuple(truth[0]), fps=10)
    timed = peers_track.Timed(peer)
    report = track_eval.evaluate_track(frames, truth, config, timed)
    assert [r["mode"] for r in report["per_frame"]] == ["locked", "locked", "reacquire", "locked"]
    assert [r["hit"] for r in report["per_frame"]] == [True, True, False, True]
    assert report["lock_recall"] == 0.75 and report["false_lock_frames"] == 0
    assert peer.fps == 10 and len(timed.seconds) == 4
    figures = peers_track.summarize_run(report, timed.seconds)
    assert figures["hits_not_locked"] == 0 and figures["locked_while_hidden"] == 0


def test_missing_peer_weights_exit_2_with_one_line(tmp_path, capsys):
    assert peers_track.main(["--peers", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "missing weight file" in err
    assert not (tmp_path / "out").exists()


def test_a_missing_peers_folder_exits_2(tmp_path, capsys):
    assert peers_track.main(["--peers", str(tmp_path / "nowhere")]) == 2
    assert "no peers folder" in capsys.readouterr().err


def test_protocols_cover_each_span_length_at_each_place_inside_the_labelled_frames():
    truth = np.tile([10.0, 5.0, 17.0, 42.0], (201, 1))
    todo = peers_track.protocols(truth)
    names = [p.name for p in todo]
    assert names[:2] == ["box", "tap"] and len(names) == 2 + 9 + 9 + 3 + 5 + 6 + 3
    assert [p.name for p in peers_track.protocols(truth, quick=True)] == ["box", "tap"]
    for p in todo:
        assert p.group in peers_track.GROUPS
        for a, b in p.options.get("occlude", ()) + p.options.get("remove", ()):
            assert b - a + 1 in peers_track.SPAN_LENGTHS and b < peers_track.LAST_FRAME
        for a, b in p.options.get("lookalike", ()):
            assert 0 < a < b <= peers_track.LAST_FRAME
    leaves = [p for p in todo if "leave" in p.options]
    assert [p.group for p in leaves] == [f"leave{i}" for i in range(1, 6)]
    assert [p.options["leave"] for p in leaves] == [1, 2, 3, 4, 5]
    crossings = [p for p in todo if p.group == "lookalike"]
    assert len({p.options["lookalike"] for p in crossings}) == 3
    # the taps on a walker cut by the view's edge whose frames the labels cover: here the
    # left and top ones (the right ones start at frame 150 and run past frame 200)
    enters = [p for p in todo if p.group == "enter"]
    assert {p.options["enter"] for p in enters} == {"left", "top"}
    for p in enters:
        assert p.options["first"] == p.options["lock_frame"] and p.options["last"] < len(truth)
    longer = peers_track.protocols(np.tile([10.0, 5.0, 17.0, 42.0], (300, 1)))
    assert sum(p.group == "enter" for p in longer) == 9


def test_lookalike_runs_are_summed_per_group_and_written_as_held_or_lost(tmp_path):
    def figures(on_copy, ended):
        return {
            "lock_recall": 0.9,
            "false_lock_frames": 2,
            "locked_while_hidden": 0,
            "recovery_frames": [],
            "frames_on_copy": on_copy,
            "ended_on_person": ended,
            "hits_not_locked": 0,
            "success_auc": 0.5 + 0.1 * len(ended) * ended[0],
            "size_ratio_on_hits": [1.0 + 0.2 * ended[0], 0.9],
        }

    runs = {
        "lookalike40:70": {t: figures([3], [False]) for t in peers_track.TRACKERS},
        "lookalike100:130": {t: figures([0], [True]) for t in peers_track.TRACKERS},
    }
    groups = peers_track.group_figures(runs, {name: "lookalike" for name in runs})
    emts = groups["lookalike"][peers_track.EMTS]
    assert emts["frames_on_copy"] == 3 and emts["crossings_ended_on_person"] == 1
    assert emts["crossings"] == 2 and emts["spans"] == 0
    timing = {t: {"ms_mean": 1.0, "ratio_to_emts": 1.0} for t in peers_track.TRACKERS}
    summary = {
        "runs": runs,
        "timing": timing,
        "groups": groups,
        "command": "python benchmarks/peers_track.py",
        "commit": "0" * 40,
        "machine": {"cpu": "cpu", "cores": 2},
        "opencv": "4.x",
        "not_run": {},
    }
    peers_track.write_markdown(summary, tmp_path / "README.md")
    text = (tmp_path / "README.md").read_text()
    assert "| lookalike40:70 | 0.900 / 2 / copy 3 / lost |" in text
    assert "| lookalike (2) | 0.900 / 4 / copy 3 / 1 of 2 held |" in text
    # the box's fit: the mean success AUC, the median of the runs' box shapes
    assert emts["mean_success_auc"] == pytest.approx(0.55)
    assert emts["size_ratio_on_hits"] == pytest.approx([1.1, 0.9])
    assert "| lookalike (2) | 0.55 / 1.10, 0.90 |" in text


def test_a_peer_runs_through_the_leave_and_lookalike_protocols():
    """The scorer drives a peer through a leave path and a look-alike crossing; the run's
    figures carry the leave span and the crossing."""
    rng = np.random.default_rng(3)
    ground = np.clip(128 + 30 * rng.normal(0, 1, (256, 320)), 0, 255).astype(np.uint8)
    frames, truth = [], []
    for t in range(70):
        view = ground.copy()
        x, y = int(80 + 0.6 * t), int(70 + 0.2 * t)
        view[y - 12 : y + 12, x - 5 : x + 5] = 30
        frames.append(np.repeat(view[..., None], 3, axis=2))
        truth.append([x - 5, y - 12, 10, 24])
    truth = np.array(truth, float)
    for options in ({"leave": 1}, {"lookalike": ((5, 15),)}):
        peer, _ = _peer([(True, (150, 100, 20, 48))] * 69)
        config = track_eval.TrackEvalConfig(lock_box=(150, 104, 20, 48), fps=10, **options)
        timed = peers_track.Timed(peer)
        figures = peers_track.summarize_run(
            track_eval.evaluate_track(frames, truth, config, timed), timed.seconds
        )
        assert figures["frames_timed"] == 70
        if "leave" in options:
            assert len(figures["recovery_frames"]) == 1 and figures["ended_on_person"] == []
        else:
            assert figures["recovery_frames"] == [] and len(figures["ended_on_person"]) == 1


def test_prepared_frames_resize_reencode_and_gray_the_clip(tmp_path):
    import cv2

    source = tmp_path / "frames"
    source.mkdir()
    rng = np.random.default_rng(0)
    image = cv2.GaussianBlur(rng.integers(0, 256, (36, 64, 3), dtype=np.uint8), (0, 0), 1.0)
    for i in (1, 2):
        cv2.imwrite(str(source / f"{i:06d}.jpg"), image, [cv2.IMWRITE_JPEG_QUALITY, 95])
    read = cv2.imread(str(source / "000001.jpg")).astype(int)
    out = {}
    for name, options in {
        "x2": {"scale": 2.0},
        "jpeg": {"jpeg": 60},
        "gray": {"gray": True},
        "mp4": {"mp4": True},
        "gray_mp4": {"gray": True, "mp4": True},
    }.items():
        into = tmp_path / name
        into.mkdir()
        peers_track.prepared_frames(source, into, **options)
        assert sorted(p.name for p in into.iterdir()) == ["000001.png", "000002.png"]
        out[name] = cv2.imread(str(into / "000001.png"), cv2.IMREAD_UNCHANGED).astype(int)
    assert out["x2"].shape == (72, 128, 3)
    assert out["jpeg"].shape == read.shape and 0 < np.abs(out["jpeg"] - read).mean() < 10
    assert out["gray"].shape == (36, 64)
    # through an mp4 and back: every frame, its size, its values moved by the codec
    assert out["mp4"].shape == read.shape and 0 < np.abs(out["mp4"] - read).mean() < 20
    # a gray clip through an mp4 decodes into three channels, as a user's gray video does
    gray_mp4 = out["gray_mp4"]
    assert gray_mp4.shape == read.shape and np.ptp(gray_mp4, axis=2).max() <= 8


def test_a_bad_scale_or_jpeg_quality_exits_2(capsys):
    clip = Path(__file__).resolve().parents[1] / "../shared/data/uav123-person12"
    peers = Path(__file__).resolve().parents[1] / "../shared/peers"
    if not (clip / "frames").is_dir() or not peers.is_dir():
        pytest.skip("needs ../shared/data/uav123-person12 and ../shared/peers")
    for option in (["--scale", "0"], ["--jpeg", "101"]):
        assert peers_track.main(["--clip", str(clip), "--peers", str(peers), *option]) == 2
        assert "--scale must be > 0" in capsys.readouterr().err
