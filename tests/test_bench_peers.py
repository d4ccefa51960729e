"""``emts bench --peers``: EMTS, VitTrack and NanoTrack v2 interleaved frame by frame on one
clip (fake cv2 trackers and a fake pipeline: no weights needed), the ratios, the JSON, and
the one-line refusals."""

import json

import cv2
import numpy as np
import pytest

import emts.apps.peer_bench as peer_bench
from cli_checks import expect_refusal
from emts.apps.peer_trackers import PEER_FILES, peer_weight_files
from emts.apps.track import LockRequest
from emts.cli import main


class Log(list):
    """(who, frame id, frame) per call, in call order."""


class FakeCv2Tracker:
    def __init__(self, name, log):
        self.name, self.log = name, log

    def init(self, frame, rect):
        self.log.append((self.name, "init", frame, rect))

    def update(self, frame):
        self.log.append((self.name, "update", frame, None))
        return True, (10, 10, 5, 12)


class FakeResult:
    mode = "locked"


class FakeRunner:
    """The pipeline's interface, recording what it is given."""

    def __init__(self, log):
        self.log, self.fps, self.resets, self.locks = log, None, 0, []

    def reset(self):
        self.resets += 1

    def lock(self, x, y, box=None):
        self.locks.append((x, y, box))

    can_run_ahead = True

    def front_ahead(self, frame, first=False, network=None):
        return ("front", frame)

    def step(self, frame, front=None):
        assert front is None or front[1] is frame  # a stream: the frame's own front end
        self.log.append(("EMTS", "step", frame, front))
        return FakeResult()


@pytest.fixture
def fakes(monkeypatch):
    """Fake peers and a fake EMTS in emts.apps.peer_bench; the shared call log."""
    log = Log()
    runner = FakeRunner(log)

    def factories(peers):
        return {name: (lambda name=name: FakeCv2Tracker(name, log)) for name in PEER_FILES}

    monkeypatch.setattr(peer_bench, "peer_factories", factories)
    monkeypatch.setattr(peer_bench, "build_runner", lambda **kw: (runner, {"detector": "fake"}))
    return log, runner


def _folder(tmp_path, count=6, size=(96, 64)):
    folder = tmp_path / "frames"
    folder.mkdir()
    for k in range(count):
        image = np.full((size[1], size[0], 3), 40 + 20 * k, np.uint8)
        cv2.imwrite(str(folder / f"{k:04d}.png"), image)
    return folder


def test_every_tracker_runs_once_on_every_frame_on_the_same_array_emts_first(tmp_path, fakes):
    log, runner = fakes
    folder = _folder(tmp_path, count=6)
    lock = LockRequest.parse("20,10,8,16@1")
    report = peer_bench.run_peer_trackers(
        tmp_path, clip=str(folder), lock=lock, frames=3, warmup=1, rounds=2, fps=10
    )
    names = ["EMTS", *PEER_FILES]
    # per round: frames 1..4 (the run starts at the lock frame), three calls each, in order;
    # then each tracker alone over the same frames as a stream (EMTS with its fronts ahead)
    assert len(log) == 2 * (4 * 3 + 4 * 3)
    for r in range(2):
        interleaved, streamed = log[24 * r : 24 * r + 12], log[24 * r + 12 : 24 * r + 24]
        for k in range(0, 12, 3):
            calls = interleaved[k : k + 3]
            assert [c[0] for c in calls] == names
            assert calls[0][2] is calls[1][2] is calls[2][2]  # one decoded array for all
            assert calls[0][3] is None  # stepped frame by frame
        assert [c[0] for c in streamed] == [n for n in names for _ in range(4)]
        assert all(c[3] is not None for c in streamed[:4])  # A-B run ahead
        assert [c[1] for c in streamed[4:]] == ["init", *["update"] * 3] * 2
        for k in range(4):
            assert np.array_equal(streamed[k][2], interleaved[3 * k][2])
    first = log[:3]
    assert [c[1] for c in first] == ["step", "init", "init"]  # the peers init on the lock frame
    assert first[1][3] == (20, 10, 8, 16)
    assert int(first[0][2][0, 0, 0]) == 60  # frame 1, the lock frame, comes first
    assert runner.resets == 4 and runner.fps == 10.0
    assert runner.locks == [(24.0, 18.0, (20.0, 10.0, 8.0, 16.0))] * 4
    assert all(report["trackers"][n]["stream_ms"] > 0 for n in names)
    assert report["trackers"]["EMTS"]["stream_ratio_to_emts"] == 1.0
    assert report["frames_per_round"] == 3 and len(report["per_round"]) == 2
    assert list(report["trackers"]) == names and report["order"] == names
    assert report["trackers"]["EMTS"]["ratio_to_emts"] == 1.0
    assert all(t["locked"] == 1.0 for t in report["trackers"].values())
    assert report["size"] == [96, 64] and report["lock"] == {"frame": 1, "box": [20, 10, 8, 16]}
    assert "1280x720" in report["notes"][0]


def test_ratios_are_each_rounds_median_over_emts_median_then_the_median_of_rounds():
    def round_(emts, vit):
        modes = ["locked"] * len(emts)
        return {"ms": {"EMTS": emts, "VitTrack": vit}, "modes": {"EMTS": modes, "VitTrack": modes}}

    summary, rounds = peer_bench.summarize(
        [round_([10, 10, 12], [5, 5, 9]), round_([8, 8, 8], [6, 6, 6]), round_([4, 4], [1, 3])]
    )
    assert [r["VitTrack"]["ratio"] for r in rounds] == [0.5, 0.75, 0.5]
    assert summary["VitTrack"]["ratio_to_emts"] == 0.5
    assert summary["VitTrack"]["median_ms"] == 5.0 and summary["EMTS"]["median_ms"] == 8.0
    assert summary["EMTS"]["ratio_to_emts"] == 1.0


def test_the_default_clip_locks_every_tracker_on_the_walker_the_generator_knows(fakes):
    log, runner = fakes
    report = peer_bench.run_peer_trackers("peers", frames=2, warmup=1, rounds=1)
    from emts.synth.still_clip import gusty_clip

    truth = gusty_clip(1).person_boxes[0][0]
    assert report["synthetic"] and report["lock"]["frame"] == 0
    assert np.allclose(report["lock"]["box"], truth, atol=0.06)
    assert log[1][3] == tuple(round(v) for v in report["lock"]["box"])
    assert log[0][2].shape == (512, 640, 3)  # grey frames are given to all as BGR
    assert "synthetic" in report["notes"][0] and "1280x720" in report["notes"][0]


def test_the_command_prints_each_tracker_and_writes_the_json(tmp_path, fakes, capsys):
    folder = _folder(tmp_path, count=5)
    out = tmp_path / "peers.json"
    argv = ["bench", "--peers", str(tmp_path), "--clip", str(folder), "--lock", "20,10,8,16"]
    argv += ["--frames", "3", "--warmup", "1", "--rounds", "2", "--json", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    for name in ["EMTS", *PEER_FILES]:
        assert f"\n{name} " in printed
    assert "x EMTS" in printed and "1280x720" in printed
    report = json.loads(out.read_text())
    assert report["rounds"] == 2 and set(report["trackers"]) == {"EMTS", *PEER_FILES}
    assert report["fps"] == 30.0  # an image folder without --fps, as the other commands


def test_a_yolo_peer_is_timed_beside_them_without_a_lock(tmp_path, fakes, capsys):
    from emts.stages.c_detect.detector import default_model_path

    if not default_model_path().is_file():
        pytest.skip("no shipped detector to stand in for YOLO")
    log, _ = fakes
    argv = ["bench", "--peers", str(tmp_path), "--peer-yolo", str(default_model_path())]
    assert main([*argv, "--frames", "1", "--warmup", "1", "--rounds", "1"]) == 0
    printed = capsys.readouterr().out
    assert "detector.onnx" in printed and "session.run only" in printed
    # the fakes saw both frames, then again as a stream; the detector ran beside them only
    assert len(log) == 2 * 3 * 2


def test_missing_peers_folder_and_weights_are_one_line(tmp_path, capsys):
    expect_refusal(capsys, ["bench", "--peers", str(tmp_path / "nowhere")], "no peers folder")
    expect_refusal(capsys, ["bench", "--peers", str(tmp_path)], "missing weight file")


def _empty_weights(tmp_path):
    for path in peer_weight_files(tmp_path):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    return tmp_path


def test_an_opencv_without_the_trackers_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.delattr(cv2, "TrackerVit_create", raising=False)
    argv = ["bench", "--peers", str(_empty_weights(tmp_path))]
    expect_refusal(capsys, argv, "no cv2.TrackerVit")


def test_weights_opencv_cannot_load_are_one_line(tmp_path, capsys):
    argv = ["bench", "--peers", str(_empty_weights(tmp_path)), "--frames", "1"]
    expect_refusal(capsys, argv, "OpenCV cannot load its weights")


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--clip", "{bad}", "--lock", "1,2,3,4"], "not a readable video"),
        (["--clip", "{none}", "--lock", "1,2,3,4"], "no such file"),
        (["--clip", "{folder}"], "--clip needs --lock"),
        (["--clip", "{folder}", "--lock", "300,20,10,10"], "outside frame 0"),
        (["--clip", "{folder}", "--lock", "20,20,10,10@9"], "ends before the lock frame 9"),
        (["--clip", "{folder}", "--lock", "20,20"], "need a box"),
        (["--clip", "{folder}", "--lock", "20,20,10"], "--lock"),
        (["--lock", "700,20,10,10"], "outside frame 0"),
        (["--clip", "{folder}", "--lock", "20,20,10,10", "--warmup", "9"], "--warmup 9"),
        (["--pace", "30"], "--pace"),
        (["--rounds", "0"], "--rounds"),
    ],
)
def test_bad_clips_and_locks_are_one_line(tmp_path, fakes, capsys, extra, fragment):
    (tmp_path / "bad.mp4").write_bytes(b"this is not a video" * 100)
    folder = _folder(tmp_path, count=3)
    names = {"bad": tmp_path / "bad.mp4", "none": tmp_path / "none.mp4", "folder": folder}
    extra = [e.format(**names) for e in extra]
    expect_refusal(capsys, ["bench", "--peers", str(tmp_path), *extra, "--frames", "2"], fragment)


@pytest.mark.parametrize("flag", [["--clip", "x.mp4"], ["--lock", "1,2,3,4"], ["--fps", "10"]])
def test_the_peers_flags_need_peers(capsys, flag):
    expect_refusal(capsys, ["bench", *flag], "goes with --peers")


def test_a_json_naming_a_peer_weight_file_is_refused(tmp_path, capsys):
    weight = peer_weight_files(_empty_weights(tmp_path))[0]
    argv = ["bench", "--peers", str(tmp_path), "--json", str(weight)]
    expect_refusal(capsys, argv, "the --peers of this run")
    assert weight.read_bytes() == b""
