"""The tests run the working tree, never an installed copy of batchpay.

CI installs batchpay as the README says (`pip install .`, not editable), then runs the tests;
the tests that start `python -m batchpay` as a process (the SIGKILL test, the README
walkthrough, the lock and Ctrl-C tests) would run that installed copy, and pass on stale code
whatever the tree says. tests/conftest.py puts the tree first on every process's path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import batchpay

TREE = Path(__file__).resolve().parent.parent


def test_this_process_imports_the_working_tree() -> None:
    assert Path(batchpay.__file__).resolve() == TREE / "batchpay" / "__init__.py"


def test_a_batchpay_process_runs_the_working_tree(tmp_path: Path) -> None:
    # run from another folder, as the process tests do: the current folder proves nothing
    shown = subprocess.run(
        [sys.executable, "-c", "import batchpay; print(batchpay.__file__)"],
        cwd=tmp_path, capture_output=True, text=True, check=True, env=os.environ.copy())
    assert Path(shown.stdout.strip()).resolve() == TREE / "batchpay" / "__init__.py"


def test_a_broken_tree_is_what_a_process_would_run(tmp_path: Path) -> None:
    """A copy of the package with one module broken, first on the path as the tree is: the
    process fails on the broken module, so a process test cannot pass on another copy."""
    broken = tmp_path / "tree"
    (broken / "batchpay").mkdir(parents=True)
    for source in (TREE / "batchpay").glob("*.py"):
        (broken / "batchpay" / source.name).write_bytes(source.read_bytes())
    (broken / "batchpay" / "__main__.py").write_text("raise SystemExit('broken tree')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(broken), os.environ["PYTHONPATH"]])}
    ran = subprocess.run([sys.executable, "-m", "batchpay", "--help"], cwd=tmp_path,
                         capture_output=True, text=True, env=env)
    assert ran.returncode != 0
    assert "broken tree" in ran.stderr
