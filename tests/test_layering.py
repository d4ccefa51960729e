"""The layering the layout promises: the runtime (the pipeline, the jobs, the command line)
loads no torch, onnx, Ray, training or evaluation code, and Stage C does not reach into Stage D.
Each import runs in a fresh interpreter, so that nothing imported by another test counts."""

import json
import pkgutil
import subprocess
import sys

import pytest

import emts.apps

JOBS = [f"emts.apps.{m.name}" for m in pkgutil.iter_modules(emts.apps.__path__)]
RUNTIME = ["emts.pipeline", "emts.front_end", *JOBS, "emts.cli"]
FORBIDDEN = ("torch", "onnx", "emts.train", "emts.eval", "ray")  # ray: emts batch's, when it runs


def _loaded_after_import(module: str) -> set[str]:
    # the command line with its parser built: every command group imported
    built = "; emts.cli.build_parser()" if module == "emts.cli" else ""
    code = f"import json, sys; import {module}{built}; print(json.dumps(sorted(sys.modules)))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(run.stdout.splitlines()[-1]))


def test_every_job_is_checked():
    jobs = {"emts.apps.track", "emts.apps.detect", "emts.apps.channels", "emts.apps.batch"}
    assert jobs <= set(JOBS)


@pytest.mark.parametrize("module", RUNTIME)
def test_the_runtime_loads_no_torch_onnx_training_or_evaluation(module):
    loaded = _loaded_after_import(module)
    bad = sorted(m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN))
    assert not bad, f"importing {module} loads {bad}"


def test_the_pipeline_loads_no_synthetic_data_code():
    assert not {m for m in _loaded_after_import("emts.pipeline") if m.startswith("emts.synth")}


def test_stage_c_does_not_import_stage_d():
    loaded = _loaded_after_import("emts.stages.c_detect.stage")
    assert "emts.stages.d_track" not in loaded
    assert not {m for m in loaded if m.startswith("emts.stages.d_track.")}
