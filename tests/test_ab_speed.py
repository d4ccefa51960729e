"""benchmarks/ab_speed.py: an earlier commit's package is importable beside emts."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
ab_speed = pytest.importorskip("ab_speed")


def test_the_base_package_imports_only_itself(tmp_path):
    if subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True).returncode:
        pytest.skip("not a git checkout")
    package = ab_speed.base_package("HEAD", tmp_path)
    assert (package / "__init__.py").is_file() and (package / "models").is_dir()
    for path in package.rglob("*.py"):
        text = path.read_text()
        assert not re.search(r"\bfrom emts\b|\bimport emts\b|\bemts\.[a-z_]", text), path
    # it runs as its own package: emts_base.geometry is not emts.geometry
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r}); "
        "import emts_base.geometry as b, emts.geometry as n; "
        "assert b.FrameGeometry is not n.FrameGeometry; print(b.__file__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith(str(tmp_path))
