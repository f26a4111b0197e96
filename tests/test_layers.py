"""The house's walls, as designed: which parts of batchpay may import which.

    fronts        cli/, console/ (and __main__)     call the engine's face only
    the door      connect, webhooks, mail           open the service, the listener, SMTP
    engine face   batchpay.engine (its __all__)     what the fronts may call
    rooms         engine/ over controls/ over journal/, sheet/, provider/; settings/ reads
                  the provider's paths and is read by every room above it
    ground floor  statuses, money, errors, files, days, display, sshsig, tls, service, serving

Three rules are measured on the real import graph (every import, at any depth, even inside a
function or under TYPE_CHECKING): no circle between the modules of one room, no arrow from a
floor to one above it (or across to another room of the same floor), and the fronts import
the engine's face, never an engine module, the journal, the controls, the sheet or the
provider. `ALLOWED` below is the same design part by part. Each rule is shown to fail when
broken, on a made-up graph. The sandbox is a service of its own, not a client of ours."""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "batchpay"

# Every part of the package (a room: a folder, or a module at the top level) and the parts
# it may import. Anything of batchpay's not listed is a crossing.
BASE = {"statuses.py", "money.py", "errors.py", "files.py", "days.py", "clock.py"}
ALLOWED: dict[str, set[str]] = {
    "statuses.py": set(),
    "tls.py": set(),
    "money.py": set(),  # money's rules serve every part, the sandbox too: it leans on none
    "sshsig.py": set(),
    "service.py": set(),
    "errors.py": {"statuses.py"},  # below everything: signals of one part live in that part
    "files.py": {"errors.py"},
    "clock.py": {"errors.py"},  # every time made, stored, read and shown, in one place
    "days.py": {"errors.py", "clock.py"},  # where a day begins, in one place
    "serving.py": {"errors.py"},
    "display.py": {"statuses.py"},
    "journal": BASE,
    "sheet": BASE,
    "provider": BASE | {"tls.py"},
    # the settings override the service's paths, headers and rate-limit windows
    "settings": BASE | {"provider"},
    "controls": BASE | {"journal", "sheet", "settings", "sshsig.py"},
    # the engine receives an opened service and builds no infrastructure
    "engine": BASE | {"journal", "sheet", "controls", "provider", "settings", "service.py",
                      "__init__.py"},
    # the receiver checks signatures; what an event does to the journal is the engine's
    "webhooks.py": BASE | {"journal", "engine", "settings", "provider", "serving.py",
                           "service.py"},
    # the SMTP sender of remittance advices; what an advice is and says is the engine's
    "mail.py": BASE | {"engine", "settings"},
    # the apprise sender of notifications and its worker; what a notice says is the engine's
    "notify.py": BASE | {"engine", "settings", "serving.py"},
    # the sandbox is a service of its own, not a client of ours
    "sandbox": BASE | {"serving.py", "tls.py"},
    "connect.py": BASE | {"settings", "service.py", "serving.py", "webhooks.py", "sandbox"},
    # the fronts: the engine's face, the door and the ground floor
    "console": BASE | {"engine", "settings", "connect.py", "service.py", "serving.py",
                       "sshsig.py", "mail.py", "notify.py"},
    "cli": BASE | {"engine", "settings", "connect.py", "service.py", "serving.py", "sshsig.py",
                   "webhooks.py", "display.py", "sandbox", "console", "mail.py", "notify.py",
                   "__init__.py"},
    "__main__.py": {"cli"},
    "__init__.py": set(),
}

# The floors, bottom up: a part imports only parts of lower floors (or its own modules).
FLOORS: list[set[str]] = [
    {"statuses.py", "tls.py", "money.py", "sshsig.py", "service.py", "__init__.py"},
    {"errors.py", "display.py"},
    {"files.py", "clock.py", "serving.py"},
    {"days.py"},
    {"journal", "sheet", "provider", "sandbox"},
    {"settings"},
    {"controls"},
    {"engine"},
    {"webhooks.py", "mail.py", "notify.py"},
    {"connect.py"},
    {"console"},
    {"cli"},
    {"__main__.py"},
]
FLOOR = {part: level for level, floor in enumerate(FLOORS) for part in floor}
FRONTS = {"cli", "console"}
BEHIND_THE_FACE = {"engine", "journal", "controls", "sheet", "provider"}


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


# --------------------------------------------------------------------------- the import graph


def module_of(name: str, package: Path = PACKAGE) -> str | None:
    """The module of batchpay a dotted name lies in, as a path relative to the package
    (`engine/render.py`, `engine/__init__.py`); None: not batchpay's."""
    head, _, rest = name.partition(".")
    if head != "batchpay" or not rest:
        return None
    parts = rest.split(".")
    if len(parts) >= 2 and parts[-1] in _face_of("/".join(parts[:-1]), package):
        return "/".join(parts[:-1]) + "/__init__.py"  # a name the package's face exports
    for end in range(len(parts), 0, -1):
        stem = "/".join(parts[:end])
        if (package / f"{stem}.py").is_file():
            return f"{stem}.py"
        if (package / stem / "__init__.py").is_file():
            return f"{stem}/__init__.py"
    return None


def _face_of(folder: str, package: Path) -> set[str]:
    """The names a package's `__init__.py` exports (its literal `__all__`)."""
    init = package / folder / "__init__.py"
    if not init.is_file():
        return set()
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.List) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return {ast.literal_eval(e) for e in node.value.elts}
    return set()


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the modules of batchpay it imports (a package's face is a module too)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        here = str(path.relative_to(package))
        graph[here] = {m for name in imported(path) if (m := module_of(name, package))
                       and m != here}
    return graph


def room_of(module: str) -> str:
    """The part a module belongs to: its folder, or itself at the top level."""
    first = module.split("/")[0]
    return first if "/" in module else module


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Every set of modules of one room that import each other round (Tarjan's strongly
    connected components, over the imports inside each room)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, set()):
            if room_of(other) != room_of(node):
                continue
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def arrows_up(graph: Mapping[str, set[str]], floor: Mapping[str, int]) -> list[str]:
    """Every import from a part to a part of its own floor or of a floor above it."""
    return [f"{module} imports {other}" for module, targets in sorted(graph.items())
            for other in sorted(targets)
            if room_of(other) != room_of(module)
            and floor[room_of(other)] >= floor[room_of(module)]]


def past_the_face(graph: Mapping[str, set[str]], face: Callable[[str], bool] | None = None,
                  ) -> list[str]:
    """Every import by a front of what lies behind the engine's face."""
    return [f"{module} imports {other}" for module, targets in sorted(graph.items())
            if room_of(module) in FRONTS for other in sorted(targets)
            if room_of(other) in BEHIND_THE_FACE and other != "engine/__init__.py"]


def face_names_used(package: Path = PACKAGE) -> list[str]:
    """Every `from batchpay.engine import NAME` of a front whose NAME the face does not
    export (an engine module imported by name, or a name that is not there)."""
    import batchpay.engine

    wrong = []
    for front in sorted(FRONTS):
        for path in sorted((package / front).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ImportFrom) and node.module == "batchpay.engine":
                    wrong += [f"{path.relative_to(package)} imports {alias.name}"
                              for alias in node.names
                              if alias.name not in batchpay.engine.__all__]
    return wrong


def test_every_part_has_a_floor() -> None:
    assert sorted(FLOOR) == parts() == sorted(ALLOWED)


def test_no_circle_between_the_modules_of_a_room() -> None:
    assert circles(import_graph()) == []


def test_no_arrow_goes_back_up() -> None:
    assert arrows_up(import_graph(), FLOOR) == []


def test_the_fronts_import_the_engine_face_only() -> None:
    assert past_the_face(import_graph()) == []
    assert face_names_used() == []


def test_a_circle_inside_a_room_is_found() -> None:
    graph = {"controls/a.py": {"controls/b.py"}, "controls/b.py": {"controls/c.py"},
             "controls/c.py": {"controls/a.py", "money.py"}, "money.py": set()}
    assert circles(graph) == [["controls/a.py", "controls/b.py", "controls/c.py"]]
    graph["controls/c.py"] = {"money.py"}
    assert circles(graph) == []


def test_an_arrow_back_up_is_found() -> None:
    graph = {"settings/load.py": {"provider/pacing.py"}, "provider/pacing.py": set()}
    assert arrows_up(graph, FLOOR) == []
    graph["provider/client.py"] = {"settings/model.py"}  # the provider reaching up
    assert arrows_up(graph, FLOOR) == ["provider/client.py imports settings/model.py"]
    graph = {"journal/store.py": {"sheet/read.py"}}  # across rooms of one floor
    assert arrows_up(graph, FLOOR) == ["journal/store.py imports sheet/read.py"]


def test_a_front_past_the_face_is_found() -> None:
    graph = {"console/app.py": {"engine/__init__.py", "settings/model.py", "money.py"}}
    assert past_the_face(graph) == []
    graph["console/work.py"] = {"journal/store.py", "engine/render.py"}
    assert past_the_face(graph) == ["console/work.py imports engine/render.py",
                                    "console/work.py imports journal/store.py"]


def test_a_front_naming_an_engine_module_through_the_face_is_found(tmp_path: Path) -> None:
    (tmp_path / "console").mkdir()
    (tmp_path / "cli").mkdir()
    (tmp_path / "console" / "page.py").write_text(
        "from batchpay.engine import run_batch, runner\n")
    assert face_names_used(tmp_path) == ["console/page.py imports runner"]
