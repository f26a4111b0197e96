"""The house's walls: which parts of batchpay may import which. The engine receives an
opened service and builds no infrastructure; the sheet knows no service and no journal;
the sandbox is a service of its own, not a client of ours."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "batchpay"

# Every part of the package (a room: a folder, or a module at the top level) and the parts
# it may import, at any depth, even inside a function. Anything of batchpay's not listed is a
# crossing. Read bottom-up: statuses, money, errors, files and days serve everyone; the journal,
# the sheet and the provider know nothing of each other; the controls read the journal and
# the sheet; the engine drives all three through an opened service; the commands (cli,
# console) and the infrastructure they open (connect, serving, webhooks, sandbox) sit on top.
BASE = {"statuses.py", "money.py", "errors.py", "files.py", "days.py"}
ALLOWED: dict[str, set[str]] = {
    "statuses.py": set(),
    "tls.py": set(),
    "money.py": set(),  # money's rules serve every part, the sandbox too: it leans on none
    "sshsig.py": set(),
    "service.py": set(),
    "errors.py": {"statuses.py"},  # below everything: signals of one part live in that part
    "files.py": {"errors.py"},
    "days.py": {"errors.py"},  # where a day begins, in one place
    "serving.py": {"errors.py"},
    "display.py": {"statuses.py"},
    # the settings override the service's paths, headers and rate-limit windows
    "settings": BASE | {"provider"},
    "journal": BASE,
    "sheet": BASE,
    "provider": BASE | {"tls.py"},
    "controls": BASE | {"journal", "sheet", "settings", "sshsig.py"},
    # the engine receives an opened service and builds no infrastructure
    "engine": BASE | {"journal", "sheet", "controls", "provider", "settings", "service.py",
                      "__init__.py"},
    # the receiver checks signatures; what an event does to the journal is the engine's
    "webhooks.py": BASE | {"journal", "engine", "settings", "provider", "serving.py",
                    "service.py"},
    # the SMTP sender of remittance advices; what an advice is and says is the engine's
    "mail.py": BASE | {"engine", "settings"},
    # the sandbox is a service of its own, not a client of ours
    "sandbox": BASE | {"serving.py", "tls.py"},
    "connect.py": BASE | {"settings", "service.py", "serving.py", "webhooks.py", "sandbox"},
    "console": BASE | {"journal", "sheet", "controls", "engine", "settings", "connect.py",
                       "service.py", "serving.py", "sshsig.py", "mail.py"},
    "cli": BASE | {"journal", "sheet", "controls", "engine", "provider", "settings",
                   "connect.py", "service.py", "serving.py", "sshsig.py", "webhooks.py",
                   "display.py", "sandbox", "console", "mail.py", "__init__.py"},
    "__main__.py": {"cli"},
    "__init__.py": set(),
}


def part_of(name: str) -> str | None:
    """The part of the package a dotted name lies in (None: not batchpay's)."""
    head, _, rest = name.partition(".")
    if head != "batchpay" or not rest:  # `from batchpay import x` is judged by batchpay.x
        return None
    first = rest.split(".")[0]
    if first == "__version__":
        return "__init__.py"
    return first if (PACKAGE / first).is_dir() else f"{first}.py"


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def parts() -> list[str]:
    return sorted(p.name for p in PACKAGE.iterdir()
                  if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py")


def crossings(part: str, package: Path = PACKAGE) -> list[str]:
    where = package / part
    found = [where] if where.is_file() else sorted(where.rglob("*.py"))
    assert found, part
    return [f"{path.relative_to(package)} imports {name}"
            for path in found for name in sorted(imported(path))
            if (other := part_of(name)) is not None and other != part
            and other not in ALLOWED[part]]


def test_every_part_of_the_package_has_a_rule() -> None:
    assert sorted(ALLOWED) == parts()


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_a_part_imports_only_what_it_may(part: str) -> None:
    assert crossings(part) == []


def test_a_broken_rule_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    # the journal reaching up into the engine, in a function, is a crossing
    monkeypatch.setitem(ALLOWED, "journal", BASE | {"engine"})
    assert crossings("journal") == []
    monkeypatch.setitem(ALLOWED, "journal", {"errors.py"})
    found = crossings("journal")
    assert any("imports batchpay.files" in c for c in found)
    assert any("imports batchpay.statuses" in c for c in found)


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
