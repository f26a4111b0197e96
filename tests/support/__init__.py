"""Helpers the tests share (no tests here): sheets to pay, the CLI and the sandbox as the tests
drive them, processes to kill, crafted files, the samples and the README walkthrough."""

import os
from pathlib import Path

# The working tree is what every test and benchmark runs, subprocesses (`python -m batchpay`)
# included: after the README's non-editable `pip install .` (or an editable install of
# another checkout), the installed copy would otherwise answer them, and a change to the tree
# would pass tests, or be measured by benchmarks, it never ran (tests/test_working_tree.py).
WORKING_TREE = Path(__file__).resolve().parent.parent.parent
if str(WORKING_TREE) not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(WORKING_TREE), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])
