"""navi-contracts stays a small wire layer (issue 18): a line budget, no code execution, no plumbing.

The process plumbing (sockets, settings base, CLI, logging) lives in navi-common, which depends on
contracts; these checks fail if contracts grows past its budget, runs generated code, or starts to
import navi-common (a dependency cycle).
"""

from __future__ import annotations

import ast
from pathlib import Path

import navi_contracts

SOURCE = Path(navi_contracts.__file__).parent
LINE_BUDGET = 1500


def _modules() -> list[Path]:
    return sorted(SOURCE.rglob("*.py"))


def test_contracts_source_stays_under_its_line_budget() -> None:
    counts = {path.name: len(path.read_bytes().splitlines()) for path in _modules()}
    assert sum(counts.values()) < LINE_BUDGET, counts


def test_contracts_never_executes_generated_code() -> None:
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in {"exec", "eval", "compile"}, f"{path.name}:{node.lineno}"


def test_contracts_imports_nothing_from_navi_common() -> None:
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                assert not name.startswith(("navi_common", "zmq", "structlog", "click")), (
                    f"{path.name}:{node.lineno} imports {name}"
                )
