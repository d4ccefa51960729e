"""Detector ensembles: several trained detectors as one ONNX graph (``emts ensemble``).

Independently trained runs of the same small network disagree on real footage far more than
their synthetic-bench figures do (uav123-person12 AP@0.25 0.41-0.62 across training seeds of
one recipe), and averaging their heatmaps keeps what they agree on. :func:`merge_detectors`
puts N detector graphs side by side behind one input and averages their outputs:

* heatmap, log-size, offset: the members' mean (probabilities averaged; sizes averaged in
  log space, i.e. the geometric mean of the boxes);
* embedding: the first member's (embedding spaces of separately trained networks do not
  match, so averaging them would mean nothing; Stage D reads the first member's);
* metadata: the trained size (all members must share it); per network size the box scale
  ``emts export --fit-box-scale`` recorded, as the members' geometric mean where every member
  has one (exact: the mean log-size plus the mean log-scale), else none at that size; the
  members' file names and sha256 in ``emts_ensemble``.

The result is an ordinary detector for the runtime (onnxruntime only, no torch): every
command's ``--model`` takes it. Building it needs the ``onnx`` package (extra ``[train]``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from emts.errors import BadInputError
from emts.stages.c_detect.detector import (
    BOX_SCALE_METADATA,
    RESIDUAL_BASELINE_METADATA,
    RESIDUAL_REFERENCE_METADATA,
    RUN_SIZE_METADATA,
    SIZE_METADATA,
    STAGE_B_METADATA,
    check_weights,
)

OUTPUTS = ("heatmap", "log_size", "offset", "embedding")
ENSEMBLE_METADATA = "emts_ensemble"


def _metadata(model) -> dict[str, str]:
    return {p.key: p.value for p in model.metadata_props}


def _check_member(model, path: Path) -> None:
    graph = model.graph
    inputs = [i for i in graph.input if i.name not in {t.name for t in graph.initializer}]
    dims = inputs[0].type.tensor_type.shape.dim if len(inputs) == 1 else []
    if len(inputs) != 1 or len(dims) != 4 or len(graph.output) != len(OUTPUTS):
        raise BadInputError(
            f"{path} is not an EMTS detector (expected one (batch, 3, H, W) input and "
            f"{len(OUTPUTS)} outputs)"
        )
    check_weights(model, path, "detector")


def _box_scales(metas: list[dict[str, str]]) -> dict[str, float]:
    """Per network size, the geometric mean of the members' box scales (sizes all record)."""
    tables = [json.loads(m[BOX_SCALE_METADATA]) if BOX_SCALE_METADATA in m else {} for m in metas]
    common = set(tables[0]).intersection(*tables[1:])
    return {
        size: round(float(np.exp(np.mean([np.log(t[size]) for t in tables]))), 4)
        for size in sorted(common)
    }


def merge_detectors(paths: list[str | Path], out: str | Path) -> dict:
    """Write the ensemble of the detector ONNX files ``paths`` to ``out``; returns its
    metadata (module doc). Refuses fewer than two members, non-detectors, members trained at
    different sizes or with different input shapes."""
    import onnx
    from onnx import compose, helper

    paths = [Path(p) for p in paths]
    if len(paths) < 2:
        raise BadInputError("an ensemble needs at least two detectors")
    models = []
    for path in paths:
        if not path.is_file():
            raise BadInputError(f"detector {path} not found")
        try:
            model = onnx.load(str(path))
        except Exception as error:  # onnx raises its own types for a corrupt file
            raise BadInputError(f"{path}: not a readable ONNX model ({error})") from None
        _check_member(model, path)
        models.append(model)
    metas = [_metadata(m) for m in models]
    sizes = {m.get(SIZE_METADATA) for m in metas}
    if len(sizes) != 1:
        trained = ", ".join(sorted(map(str, sizes)))
        raise BadInputError(f"the members were trained at different sizes: {trained}")
    warps = {m.get(STAGE_B_METADATA) or "network" for m in metas}
    if len(warps) != 1:
        raise BadInputError(f"the members run different Stage B warps: {', '.join(sorted(warps))}")
    baselines = {m.get(RESIDUAL_BASELINE_METADATA) or "1" for m in metas}
    if len(baselines) != 1:
        spans = ", ".join(sorted(baselines))
        raise BadInputError(f"the members were trained on R over different frames: {spans}")
    references = {m.get(RESIDUAL_REFERENCE_METADATA) for m in metas}
    if len(references) != 1:
        found = ", ".join(sorted(r or "none (the default)" for r in references))
        raise BadInputError(
            f"the members are fed different residual levels ({found}): trained on different "
            "Stage B channels"
        )
    shapes = {str(m.graph.input[0].type.tensor_type.shape) for m in models}
    if len(shapes) != 1:
        raise BadInputError("the members' inputs differ (fixed sizes or channels)")
    opsets = {max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")) for m in models}
    if len(opsets) != 1:
        raise BadInputError(f"the members use different ONNX opsets: {sorted(opsets)}; re-export")

    input_name = models[0].graph.input[0].name
    nodes, initializers, outputs = [], [], []
    for index, model in enumerate(models):
        renamed = compose.add_prefix(model, f"m{index}_", rename_inputs=False)
        graph = renamed.graph
        if graph.input[0].name != input_name:  # the shared input keeps the first member's name
            for node in graph.node:
                node.input[:] = [input_name if n == graph.input[0].name else n for n in node.input]
        nodes.extend(graph.node)
        initializers.extend(graph.initializer)
        outputs.append([o.name for o in graph.output])
    output_infos = []
    for k, name in enumerate(OUTPUTS):
        member_outputs = [o[k] for o in outputs]
        if name == "embedding":
            nodes.append(helper.make_node("Identity", [member_outputs[0]], [name]))
        else:
            nodes.append(helper.make_node("Mean", member_outputs, [name]))
        info = models[0].graph.output[k]
        output_infos.append(
            helper.make_tensor_value_info(
                name,
                info.type.tensor_type.elem_type,
                [d.dim_param or d.dim_value for d in info.type.tensor_type.shape.dim],
            )
        )
    graph = helper.make_graph(
        nodes, "emts_detector_ensemble", [models[0].graph.input[0]], output_infos, initializers
    )
    merged = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", max(opsets))], producer_name="emts"
    )
    merged.ir_version = models[0].ir_version
    members = [
        {"file": str(p), "sha256": hashlib.sha256(p.read_bytes()).hexdigest()} for p in paths
    ]
    meta = {SIZE_METADATA: metas[0][SIZE_METADATA]} if metas[0].get(SIZE_METADATA) else {}
    scales = _box_scales(metas)
    if scales:
        meta[BOX_SCALE_METADATA] = json.dumps(scales)
    run_sizes = {m.get(RUN_SIZE_METADATA) for m in metas}
    if len(run_sizes) == 1 and None not in run_sizes:
        meta[RUN_SIZE_METADATA] = run_sizes.pop()
    # shared by every member (checked above)
    for key in (RESIDUAL_REFERENCE_METADATA, STAGE_B_METADATA, RESIDUAL_BASELINE_METADATA):
        if metas[0].get(key):
            meta[key] = metas[0][key]
    meta[ENSEMBLE_METADATA] = json.dumps(members)
    for key, value in meta.items():
        entry = merged.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.checker.check_model(merged)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(merged, str(out))
    return meta
