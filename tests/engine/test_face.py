"""The engine's face (batchpay/engine/__init__.py): the names the fronts may call, each the
very object of the module that defines it, listed once for the type checker and once for
the lazy loader, and the two lists the same."""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import batchpay.engine as face

FACE_FILE = Path(face.__file__)


def typing_names() -> set[str]:
    """The names the face's `if TYPE_CHECKING:` block binds."""
    for node in ast.parse(FACE_FILE.read_text()).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            return {alias.asname or alias.name for stmt in node.body
                    if isinstance(stmt, ast.ImportFrom) for alias in stmt.names}
    raise AssertionError("no TYPE_CHECKING block")


def test_the_face_lists_each_name_once_for_the_loader_and_the_type_checker() -> None:
    assert face.__all__ == sorted(face.__all__)
    assert set(face.__all__) == set(face._FACE) == typing_names()


@pytest.mark.parametrize("name", face.__all__)
def test_a_face_name_is_its_module_s_object(name: str) -> None:
    module, attr = face._FACE[name]
    assert getattr(face, name) is getattr(importlib.import_module(module, face.__name__), attr)


def test_a_name_the_face_does_not_export_is_refused() -> None:
    with pytest.raises(AttributeError, match="only what its face exports"):
        face.Batch  # noqa: B018 - the engine's internal runner class is not the fronts'


def test_a_module_of_the_same_name_does_not_hide_the_face_s_function() -> None:
    code = ("import batchpay.engine.make_plan, batchpay.engine, inspect; "
            "print(inspect.isfunction(batchpay.engine.make_plan))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "True"
    assert inspect.isfunction(face.make_plan)
