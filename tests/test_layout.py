"""The tree reads as the data flow: the library imports no Dagster and its packages import only downward."""

import ast
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1] / "lb_pipeline"
# lowest first; a package may import only packages listed before it
LAYERS = ["errors", "settings", "workers", "processes", "model", "formats", "algorithms", "snapshots", "whatif", "simulation", "planning", "transforms",
          "quality", "ingest", "report", "spark", "partition_lock", "cli_types", "terminal", "cli_simulation", "cli_collect", "cli"]


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def _package(path: Path) -> str:
    parts = path.relative_to(LIBRARY).parts
    return parts[0] if len(parts) > 1 else path.stem


def test_library_never_imports_dagster():
    offenders = [str(p) for p in LIBRARY.rglob("*.py") if any(m.split(".")[0] == "dagster" for m in _imports(p))]
    assert offenders == []


def test_every_package_has_a_layer():
    packages = {_package(p) for p in LIBRARY.rglob("*.py")} - {"__init__"}
    assert packages <= set(LAYERS), f"add {sorted(packages - set(LAYERS))} to LAYERS"


def test_imports_run_only_downward():
    upward = []
    for path in LIBRARY.rglob("*.py"):
        source = _package(path)
        if source == "__init__":
            continue
        for module in _imports(path):
            if module.startswith("lb_pipeline."):
                target = module.split(".")[1]
                if target != source and LAYERS.index(target) > LAYERS.index(source):
                    upward.append(f"{path.relative_to(LIBRARY)} imports {module}")
    assert upward == []
