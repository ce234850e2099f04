"""The package stays readable: no module over 300 lines and no function over 60, unless a
comment right above it (or on its `def` line) starting with "long:" says why."""

import ast

from tests.conftest import REPO

MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 60


def _justified(lines: list[str], node: ast.AST) -> bool:
    first = node.decorator_list[0].lineno if node.decorator_list else node.lineno  # type: ignore[attr-defined]
    around = lines[max(first - 3, 0) : node.lineno]  # type: ignore[attr-defined]
    return any("# long:" in line for line in around)


def test_modules_and_functions_stay_short() -> None:
    too_long = []
    for path in sorted((REPO / "remark_data").rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        name = path.relative_to(REPO)
        if len(lines) > MAX_MODULE_LINES and "# long-module:" not in text:
            too_long.append(f"{name}: {len(lines)} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if length > MAX_FUNCTION_LINES and not _justified(lines, node):
                    too_long.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    assert not too_long, "\n".join(too_long)
