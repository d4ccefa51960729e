"""``emts ablate`` (issue 57): the variants change what they say, and a tiny sweep (2 variants
x 2 seeds x a few steps, tiny synthetic sets, a HIT-UAV folder of the two packaged stills, a
drawn stand-in for person12) runs on one local Ray instance, resumes after a killed run and
never redoes a finished one."""

from __future__ import annotations

import json
import shutil
from importlib import resources

import cv2
import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("pycocotools")

from emts.cli import main  # noqa: E402
from emts.cli.ablate import THESIS_ROWS, TRAINED_ROWS, parse_seeds  # noqa: E402
from emts.eval.ablation import ROWS, VARIANTS, Protocol, with_step_budget  # noqa: E402
from emts.train.loop import TrainConfig  # noqa: E402

STEPS = 3  # training steps per run: the machinery, not the study
SEEDS = "0,1"
CATEGORIES = {"Person": 0, "Car": 1, "Bicycle": 2, "OtherVehicle": 3}


def _hituav(root) -> None:
    """A HIT-UAV folder (train/, val/, COCO json) of the two stills shipped in the package."""
    folder = resources.files("emts") / "data"
    stills = sorted(p.name for p in folder.iterdir() if p.name.endswith(".jpg"))
    images, annotations = [], []
    for split in ("train", "val"):
        (root / split).mkdir(parents=True)
    for number, name in enumerate(stills):
        meta = json.loads((folder / name.replace(".jpg", ".json")).read_text())
        original = meta["source"].split("image ")[1].split()[0]  # the HIT-UAV file name
        for split in ("train", "val"):
            (root / split / original).write_bytes((folder / name).read_bytes())
        images.append({"id": number, "file_name": original})
        for box in meta["boxes_xywh"]:
            category = CATEGORIES.get(box["category"], 3)
            annotations.append({"image_id": number, "category_id": category, "bbox": box["bbox"]})
    coco = {"images": images, "annotations": annotations}
    for split in ("train", "val"):
        (root / f"{split}.json").write_text(json.dumps(coco))


def _person12(root, frames: int = 6) -> None:
    """A stand-in for uav123-person12: a textured ground drifting under the camera with one
    dark walker, 640x360 JPEGs and OTB labels."""
    rng = np.random.default_rng(5)
    ground = cv2.GaussianBlur(rng.integers(0, 255, (420, 720), np.uint8), (0, 0), 3)
    (root / "frames").mkdir(parents=True)
    labels = []
    for k in range(frames):
        frame = ground[k : k + 360, 2 * k : 2 * k + 640].copy()
        box = (200 + 3 * k, 150, 17, 42)
        cv2.rectangle(frame, box[:2], (box[0] + box[2], box[1] + box[3]), 30, -1)
        cv2.imwrite(str(root / "frames" / f"{k + 1:06d}.jpg"), cv2.merge([frame] * 3))
        labels.append(",".join(str(v) for v in box))
    (root / "groundtruth_rect.txt").write_text("\n".join(labels) + "\n")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    from emts.synth.generate import generate_set

    root = tmp_path_factory.mktemp("ablate-data")
    for name in ("tier1", "negatives", "bench"):
        generate_set(name, root / name, clips=2, seed=7, workers=1, progress=False)
    _hituav(root / "hit-uav")
    _person12(root / "person12")
    return root


def _argv(data, out, *more: str) -> list[str]:
    return [
        "ablate",
        "--out",
        str(out),
        "--tier1",
        str(data / "tier1"),
        "--negatives",
        str(data / "negatives"),
        "--hituav",
        str(data / "hit-uav"),
        "--bench",
        str(data / "bench"),
        "--person12",
        str(data / "person12"),
        "--steps",
        str(STEPS),
        "--eval-limit",
        "2",
        "--cpus-per-run",
        "1",
        *more,
    ]


@pytest.fixture(scope="module")
def sweep(ray_session, data, tmp_path_factory):
    """reference and pure-appearance x seeds 0, 1 (no thesis rows): (out, exit code, stderr)."""
    out = tmp_path_factory.mktemp("sweep") / "study"
    argv = _argv(data, out, "--variants", "pure-appearance", "--seeds", SEEDS, "--no-thesis-rows")
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(argv)
    return out, code, err.getvalue()


def _results(out) -> dict[tuple[str, int], dict]:
    found = {}
    for path in (out / "runs").glob("*/*/result.json"):
        result = json.loads(path.read_text())
        found[(result["row"], result["seed"])] = result
    return found


def test_a_tiny_sweep_writes_a_result_per_run_and_the_table(sweep):
    out, code, err = sweep
    assert code == 0, err
    results = _results(out)
    assert set(results) == {(r, s) for r in ("reference", "pure-appearance") for s in (0, 1)}
    for (row, seed), result in results.items():
        assert result["study"] is False and result["step_budget_override"] == STEPS
        assert result["config"]["seed"] == seed
        assert result["config"]["motion_channels"] is (row == "reference")
        assert set(result["data"]) >= {"tier1", "negatives", "hituav_val", "bench", "person12"}
        assert all(isinstance(v, str) for v in result["data"].values())
        assert "git" in result["code"] or "emts" in result["code"]
        assert result["train_seconds"] > 0
        assert 0 <= result["scores"]["bench AP@0.25"] <= 1
        assert result["figures"]["person12"]["frames"] == 2
    assert "NOT the study" in err
    assert sum(line.startswith("[") for line in err.splitlines()) == 4  # a line per run
    markdown = (out / "ablation.md").read_text()
    assert "NOT the study" in markdown and "| pure-appearance |" in markdown
    table = json.loads((out / "ablation.json").read_text())
    entry = table["rows"]["reference"]["columns"]["bench AP@0.25"]
    assert entry["std"] is not None and len(entry["values"]) == 2
    assert "bench AP@0.25" in table["deltas"]["pure-appearance"]["columns"]
    assert (out / "ablation.png").stat().st_size > 10_000


def test_a_sweep_run_again_redoes_nothing_and_a_killed_run_continues(sweep, data, tmp_path, capsys):
    out = shutil.copytree(sweep[0], tmp_path / "study")
    stamps = {p: p.stat().st_mtime_ns for p in (out / "runs").glob("*/*/result.json")}
    # a run killed after its training, in the middle of its scoring: no result, one score
    killed = out / "runs" / "pure-appearance" / "seed1"
    (killed / "result.json").unlink()
    (killed / "scores" / "hituav.json").unlink()
    model = (killed / "model.onnx").stat().st_mtime_ns
    bench = (killed / "scores" / "bench.json").stat().st_mtime_ns
    argv = _argv(data, out, "--variants", "pure-appearance", "--seeds", SEEDS, "--no-thesis-rows")
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "3 of 4 runs done earlier, skipped" in err
    assert sum(line.startswith("[") for line in err.splitlines()) == 1
    for path, stamp in stamps.items():
        if path.parent != killed:
            assert path.stat().st_mtime_ns == stamp  # never redone
    assert (killed / "result.json").is_file()
    assert (killed / "model.onnx").stat().st_mtime_ns == model  # not retrained
    assert (killed / "scores" / "bench.json").stat().st_mtime_ns == bench  # not rescored


def test_a_run_killed_mid_training_resumes_from_its_checkpoint(sweep, data, tmp_path, capsys):
    out = tmp_path / "study"
    shutil.copytree(sweep[0] / "runs" / "reference" / "seed0", out / "runs" / "reference" / "seed0")
    folder = out / "runs" / "reference" / "seed0"
    for name in ("result.json", "training.json", "model.onnx"):
        (folder / name).unlink()
    shutil.rmtree(folder / "scores")
    argv = _argv(data, out, "--variants", "reference", "--seeds", "0", "--no-thesis-rows")
    assert main(argv) == 0, capsys.readouterr().err
    training = json.loads((folder / "training.json").read_text())
    assert training["resumed_from_checkpoint"] is True


def test_runs_of_an_earlier_report_are_carried_and_not_trained_again(sweep, data, tmp_path, capsys):
    out = tmp_path / "elsewhere"  # another machine's folder: only the committed report travels
    report = tmp_path / "ablation.json"
    shutil.copy(sweep[0] / "ablation.json", report)
    argv = _argv(data, out, "--variants", "pure-appearance", "--seeds", SEEDS, "--no-thesis-rows")
    assert main([*argv, "--results-from", str(report)]) == 0
    err = capsys.readouterr().err
    assert "4 finished runs carried" in err and "4 of 4 runs done earlier, skipped" in err
    assert not list(out.glob("runs/*/*/model.onnx"))  # nothing trained
    carried = _results(out)
    assert carried.keys() == _results(sweep[0]).keys()
    assert all(r["carried_from"] == str(report) for r in carried.values())
    table = json.loads((out / "ablation.json").read_text())
    before = json.loads(report.read_text())
    assert table["rows"] == before["rows"]
    # another protocol is another study: nothing carried, and a report that is none is refused
    other = _argv(data, tmp_path / "other", "--variants", "reference", "--seeds", "0")
    other[other.index("--eval-limit") + 1] = "3"
    from emts.eval.ablation_sweep import carry_results, plan

    specs = plan(tmp_path / "other", ["reference"], [0], STEPS, 1, Protocol(3, 3, 3, 1))
    assert carry_results(specs, report) == []
    assert main([*other, "--results-from", str(data / "bench" / "manifest.json")]) == 2
    assert "not an emts ablate report" in capsys.readouterr().err


def test_report_only_tables_the_runs_of_reports_and_result_files_and_trains_nothing(
    sweep, data, tmp_path, capsys
):
    # one report without pure-appearance seed 1, and that run's result.json on its own
    report = json.loads((sweep[0] / "ablation.json").read_text())
    report["runs"] = [r for r in report["runs"] if (r["row"], r["seed"]) != ("pure-appearance", 1)]
    (tmp_path / "ablation.json").write_text(json.dumps(report))
    single = sweep[0] / "runs" / "pure-appearance" / "seed1" / "result.json"
    out = tmp_path / "table"
    argv = _argv(data, out, "--variants", "pure-appearance", "--seeds", "0-2", "--no-thesis-rows")
    sources = [str(tmp_path / "ablation.json"), str(single)]
    assert main([*argv, "--results-from", *sources, "--report-only"]) == 0
    err = capsys.readouterr().err
    assert "4 finished runs carried" in err and "4 of 6 runs finished" in err
    assert not list(out.glob("runs/*/*/model.onnx")) and not list(out.glob("runs/*/*/train"))
    table = json.loads((out / "ablation.json").read_text())
    assert table["rows"]["pure-appearance"]["seeds"] == [0, 1]
    assert table["rows"] == json.loads((sweep[0] / "ablation.json").read_text())["rows"]
    assert sorted(table["missing"]) == ["pure-appearance seed 2", "reference seed 2"]
    assert "pure-appearance seed 2: not run yet" in (out / "ablation.md").read_text()
    assert main([*argv, "--results-from", str(data / "bench" / "manifest.json")]) == 2


def test_a_checkpoint_beside_a_report_resumes_that_run(sweep, data, tmp_path, capsys):
    # an unfinished training carried to another machine: its checkpoint beside the report
    report_dir = tmp_path / "report"
    (report_dir / "checkpoints").mkdir(parents=True)
    shutil.copy(sweep[0] / "ablation.json", report_dir / "ablation.json")
    runs = json.loads((report_dir / "ablation.json").read_text())
    runs["runs"] = [r for r in runs["runs"] if not (r["row"] == "reference" and r["seed"] == 0)]
    (report_dir / "ablation.json").write_text(json.dumps(runs))
    saved = sweep[0] / "runs" / "reference" / "seed0" / "train" / "checkpoint.pt"
    shutil.copy(saved, report_dir / "checkpoints" / "reference-seed0.pt")
    out = tmp_path / "elsewhere"
    argv = _argv(data, out, "--variants", "reference", "--seeds", "0", "--no-thesis-rows")
    assert main([*argv, "--results-from", str(report_dir / "ablation.json")]) == 0
    assert "from its checkpoints: reference seed 0" in capsys.readouterr().err
    training = json.loads((out / "runs" / "reference" / "seed0" / "training.json").read_text())
    assert training["resumed_from_checkpoint"] is True


def test_a_clip_sets_hash_is_its_content_not_its_generation_time(data, tmp_path):
    from emts.eval.ablation import clip_set_hash

    copy = shutil.copytree(data / "bench", tmp_path / "bench")
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest.update(seconds=manifest.get("seconds", 0) + 99, frames_per_second=1.0, bytes=1)
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=1))
    assert clip_set_hash(copy) == clip_set_hash(data / "bench")
    label = sorted((copy / "clips").glob("*.json"))[0]
    label.write_text(label.read_text().replace('"frame":0', '"frame":0 ', 1) + " ")
    assert clip_set_hash(copy) != clip_set_hash(data / "bench")
    assert clip_set_hash(tmp_path / "nothing") is None


def test_other_settings_in_the_same_folder_are_refused_in_one_line(sweep, data, capsys):
    argv = _argv(data, sweep[0], "--variants", "pure-appearance", "--seeds", SEEDS)
    argv[argv.index("--steps") + 1] = "5"
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "other settings" in err[0]


def test_the_luminance_variants_train_on_zero_motion_channels_and_the_reference_does_not():
    from emts.train.data import MixtureStream, Sample

    class Source:  # every sample with motion in R and D
        def sample(self, rng, frames, clip_number):
            channels = rng.random((frames, 3, 192, 256), dtype=np.float32) + 0.1
            empty = [np.zeros((0, 4))] * frames
            ids = [np.zeros(0, int)] * frames
            return Sample(channels, empty, ids, [np.zeros(0)] * frames, "tier1")

    for name in ("reference", "pure-appearance", "luminance-only", "no-ego"):
        config = VARIANTS[name].train_config(seed=0)
        stream = MixtureStream(
            {"tier1": Source()},
            {"tier1": 1.0},
            clips=2,
            frames=2,
            seed=0,
            motion_channels=config.motion_channels,
        )
        x = next(iter(stream))["x"].numpy()
        assert (x[:, 0] > 0).all()  # L is always there
        zeroed = bool(np.abs(x[:, 1:]).max() == 0)
        assert zeroed == (name in ("pure-appearance", "luminance-only"))


def test_each_variant_changes_one_factor_of_the_recipe():
    recipe = TrainConfig(seed=0)
    changed = {}
    for name, variant in VARIANTS.items():
        config = variant.train_config(seed=0)
        changed[name] = {
            k for k in recipe.__dataclass_fields__ if getattr(config, k) != getattr(recipe, k)
        }
        if config.model != recipe.model:
            changed[name] |= {f"model.tsm={config.model.tsm}"}
            changed[name].discard("model")
    assert changed["reference"] == set()
    assert changed["pure-appearance"] == {"motion_channels"}
    assert changed["no-ego"] == {"ego_compensation"}
    assert changed["no-tier2-pretrain"] == {"phase1_epochs"}
    assert changed["no-tier2"] == {"phase1_mixture", "mixture"}
    assert changed["tsm-causal"] == {"model.tsm=causal"}
    assert changed["tsm-bidirectional"] == {"model.tsm=bidirectional"}
    # luminance-only is one factor from its base, tsm-bidirectional
    assert changed["luminance-only"] - changed["tsm-bidirectional"] == {"motion_channels"}
    assert VARIANTS["luminance-only"].base == "tsm-bidirectional"
    no_tier2 = VARIANTS["no-tier2"].train_config(seed=0)
    assert "tier2" not in no_tier2.sources_used()
    assert [n for _, n, _ in no_tier2.phases()] == [n for _, n, _ in recipe.phases()]


def test_no_ego_channels_differ_from_compensated_ones_under_camera_motion():
    from emts.front_end import channels_at

    rng = np.random.default_rng(1)
    ground = cv2.GaussianBlur(rng.integers(0, 255, (600, 760), np.uint8), (0, 0), 2)
    frames = [ground[2 * k : 2 * k + 512, 3 * k : 3 * k + 640].copy() for k in range(3)]
    compensated = channels_at(frames)
    raw = channels_at(frames, ego_compensation=False)
    np.testing.assert_array_equal(compensated[:, 0], raw[:, 0])  # L is the same
    assert np.abs(raw[2, 2]).mean() > 3 * np.abs(compensated[2, 2]).mean()  # D is not


def test_a_step_budget_keeps_the_recipes_phase_proportion():
    config = with_step_budget(TrainConfig(), 23)
    assert [n for _, n, _ in config.phases()] == [3, 20]  # 1,500 : 10,000 of 11,500
    assert [n for _, n, _ in with_step_budget(TrainConfig(phase1_epochs=0), 5).phases()] == [0, 5]
    assert Protocol().is_study and not Protocol(bench_clips=2).is_study


def test_the_command_line_lists_the_rows_the_study_defines():
    assert list(ROWS) == [*TRAINED_ROWS, *THESIS_ROWS]
    assert parse_seeds("0-2") == [0, 1, 2] and parse_seeds("4,1") == [4, 1]


@pytest.mark.parametrize(
    "more, fragment",
    [
        (["--variants", "nope"], "unknown"),
        (["--seeds", "1,1"], "distinct"),
        (["--tier1", "/nonexistent/tier1"], "not a clip set"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(data, tmp_path, capsys, more, fragment):
    argv = _argv(data, tmp_path / "out", *more)
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse's own refusals
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fragment in err[0], err
