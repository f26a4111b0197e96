"""The house's walls: which parts of batchpay may import which. The engine receives an
opened service and builds no infrastructure; the sheet knows no service and no journal;
the sandbox is a service of its own, not a client of ours."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "batchpay"

# part of the package → modules it must never import (at any depth, even inside a function)
FORBIDDEN = {
    "engine": ("batchpay.sandbox", "batchpay.webhooks", "batchpay.cli", "batchpay.connect",
               "batchpay.serving", "batchpay.display"),
    "sheet": ("batchpay.provider", "batchpay.engine", "batchpay.sandbox", "batchpay.cli"),
    "sandbox": ("batchpay.provider", "batchpay.engine", "batchpay.cli"),
    "service.py": ("batchpay.sandbox", "batchpay.webhooks", "batchpay.engine"),
    # the error tree sits below everything: signals of one part live in that part
    "errors.py": ("batchpay.provider", "batchpay.engine", "batchpay.sheet", "batchpay.sandbox",
                  "batchpay.cli", "batchpay.console", "batchpay.sshsig"),
    # money's rules serve every part, the sandbox too: it may lean on none of them
    "money.py": ("batchpay",),
}


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def modules(part: str) -> list[Path]:
    where = PACKAGE / part
    return [where] if where.is_file() else sorted(where.rglob("*.py"))


@pytest.mark.parametrize("part", sorted(FORBIDDEN))
def test_a_part_imports_only_what_it_may(part: str) -> None:
    found = modules(part)
    assert found, part
    crossings = [f"{path.relative_to(PACKAGE)} imports {name}"
                 for path in found for name in sorted(imported(path))
                 if any(name == wall or name.startswith(wall + ".")
                        for wall in FORBIDDEN[part])]
    assert crossings == []


def test_the_check_sees_a_crossing(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from batchpay.sandbox.server import start_in_thread\n")
    assert "batchpay.sandbox.server" in imported(module)


def test_the_error_module_holds_only_the_batchpay_error_tree() -> None:
    import inspect

    from batchpay import errors

    classes = [obj for _, obj in inspect.getmembers(errors, inspect.isclass)
               if obj.__module__ == errors.__name__]
    assert errors.BatchpayError in classes
    assert [c.__name__ for c in classes if not issubclass(c, errors.BatchpayError)] == []
