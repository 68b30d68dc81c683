"""Definitions from the real tree-sitter grammars: Python (methods with their class, decorators, nesting),
TypeScript (interfaces, types, enums, arrow-function consts), JavaScript, and notebooks' code cells."""

from __future__ import annotations

from eca_notebook.retrieval._symbols import cell_python, language_for, notebook_cells, parse_symbols

from .conftest import CONFIG_PY, SHAPES_TS, UTIL_JS, notebook


def table(symbols):
    return [(s.name, s.kind, s.container, s.start_line) for s in symbols]


def test_python_methods_carry_their_class_and_decorators_stay_in_the_signature():
    symbols = parse_symbols(CONFIG_PY.encode(), "python")
    assert table(symbols) == [
        ("ConfigLoader", "class", None, 5),
        ("from_env", "method", "ConfigLoader", 9),
        ("parseConfigFile", "method", "ConfigLoader", 12),
        ("load_settings", "function", None, 17),
    ]
    from_env = symbols[1]
    assert from_env.signature == '@classmethod def from_env(cls) -> "ConfigLoader":'
    assert (from_env.start_col, from_env.end_line) == (5, 10)
    assert symbols[2].signature == "def parseConfigFile(self, path: str) -> dict:"


def test_nested_definitions_name_every_enclosing_scope():
    source = b"class A:\n    class B:\n        def m(self):\n            def helper(): pass\n"
    assert table(parse_symbols(source, "python")) == [
        ("A", "class", None, 1), ("B", "class", "A", 2), ("m", "method", "A.B", 3), ("helper", "function", "A.B.m", 4),
    ]


def test_a_syntax_error_costs_only_the_broken_part():
    source = b"def good():\n    pass\n\ndef broken(:\n\nclass Fine:\n    pass\n"
    names = [s.name for s in parse_symbols(source, "python")]
    assert "good" in names and "Fine" in names


def test_typescript_interfaces_types_enums_classes_and_arrow_consts():
    symbols = parse_symbols(SHAPES_TS.encode(), "typescript")
    assert table(symbols) == [
        ("Shape", "interface", None, 1),
        ("ShapeId", "type", None, 5),
        ("Color", "enum", None, 7),
        ("Circle", "class", None, 9),
        ("constructor", "method", "Circle", 10),
        ("area", "method", "Circle", 12),
        ("makeCircle", "function", None, 17),
    ]
    assert symbols[-1].signature == "export const makeCircle = (radius: number): Circle =>"
    assert symbols[3].signature == "export class Circle implements Shape"


def test_javascript_and_tsx():
    assert table(parse_symbols(UTIL_JS.encode(), "javascript"))[:3] == [
        ("EventBus", "class", None, 1), ("emit", "method", "EventBus", 2), ("debounce", "function", None, 5),
    ]
    tsx = b"export default function App() { return <div/> }\nconst Row = () => <li/>;\n"
    assert table(parse_symbols(tsx, "tsx")) == [("App", "function", None, 1), ("Row", "function", None, 2)]


def test_notebook_code_cells_parse_as_python_with_magics_kept_out_of_the_way():
    cells = notebook_cells(notebook().encode())
    assert [(c.index, c.id, c.kind) for c in cells] == [(0, "intro", "markdown"), (1, "imports", "code"),
                                                        (2, "plotting", "code")]
    assert cell_python("%matplotlib inline\n!pip install x\nx = 1\n") == b"#matplotlib inline\n#pip install x\nx = 1\n"
    symbols = parse_symbols(cell_python(cells[2].source), "python", cell=cells[2])
    assert [(s.name, s.cell_index, s.cell_id, s.start_line) for s in symbols] == [
        ("plot_monthly_revenue", 2, "plotting", 1)]


def test_languages_by_suffix():
    assert [language_for(n) for n in ("a.py", "b.TS", "c.tsx", "d.mjs", "e.ipynb", "f.go", "Makefile")] == [
        "python", "typescript", "tsx", "javascript", "notebook", None, None]
