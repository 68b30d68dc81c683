"""Definitions in source files, from tree-sitter's prebuilt grammars (Python, TypeScript, TSX, JavaScript), and the
code cells of notebooks (parsed as Python).

Why queries rather than a Python walk over the tree: a query runs in C and hands back only the definition nodes; a
walk would create a Python object for every node of every file (a 100,000-file workspace has tens of millions). The
container of a definition (``Outer.method``) is then found by following ``parent`` links, a handful per definition.

Grammars load on first use (``lru_cache``): importing this module costs nothing, and a workspace with no Python file
never loads the Python grammar.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

__all__ = ["Cell", "SymbolDef", "language_for", "notebook_cells", "parse_symbols"]

#: File suffix → grammar. Anything else is text only.
_SUFFIXES = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ipynb": "notebook",
}

_PYTHON_QUERY = """
(function_definition name: (identifier) @name) @def
(class_definition name: (identifier) @name) @def
"""

_JS_COMMON = """
(function_declaration name: (identifier) @name) @def
(generator_function_declaration name: (identifier) @name) @def
(method_definition name: (_) @name) @def
(variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @def
"""

_TS_QUERY = _JS_COMMON + """
(class_declaration name: (type_identifier) @name) @def
(abstract_class_declaration name: (type_identifier) @name) @def
(abstract_method_signature name: (_) @name) @def
(interface_declaration name: (type_identifier) @name) @def
(type_alias_declaration name: (type_identifier) @name) @def
(enum_declaration name: (identifier) @name) @def
(public_field_definition name: (_) @name value: [(arrow_function) (function_expression)]) @def
(internal_module name: (_) @name) @def
"""

_JS_QUERY = _JS_COMMON + """
(class_declaration name: (identifier) @name) @def
(field_definition property: (_) @name value: [(arrow_function) (function_expression)]) @def
"""

#: Node type → kind. ``function_definition`` becomes ``method`` directly inside a class.
_KINDS = {
    "function_definition": "function",
    "class_definition": "class",
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "method_definition": "method",
    "abstract_method_signature": "method",
    "variable_declarator": "function",
    "public_field_definition": "method",
    "field_definition": "method",
    "class_declaration": "class",
    "abstract_class_declaration": "class",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
    "internal_module": "namespace",
}
_CLASSES = frozenset({"class_definition", "class_declaration", "abstract_class_declaration", "class",
                      "interface_declaration"})
_NAMED_SCOPES = frozenset(_KINDS) - {"variable_declarator"}
_SIGNATURE_CHARS = 200
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class SymbolDef:
    """One definition. Lines and columns are 1-based; in a notebook they count within the cell."""

    name: str
    kind: str
    container: str | None
    start_line: int
    start_col: int
    end_line: int
    end_col: int
    signature: str
    cell_index: int | None = None
    cell_id: str | None = None


@dataclass(frozen=True, slots=True)
class Cell:
    """A notebook cell's source, for symbols (code cells) and text search (every cell)."""

    index: int
    id: str | None
    kind: str  # "code", "markdown", "raw"
    source: str


def language_for(name: str) -> str | None:
    """The grammar for a file name (``notebook`` for ``.ipynb``), or None: text search only."""
    dot = name.rfind(".")
    return _SUFFIXES.get(name[dot:].lower()) if dot >= 0 else None


@cache
def _grammar(language: str) -> tuple[Any, Any]:
    """(parser, query) of a language, built once per process."""
    from tree_sitter import Language, Parser, Query

    if language == "python":
        import tree_sitter_python

        lang, source = Language(tree_sitter_python.language()), _PYTHON_QUERY
    elif language in ("typescript", "tsx"):
        import tree_sitter_typescript

        ts = tree_sitter_typescript
        raw = ts.language_tsx() if language == "tsx" else ts.language_typescript()
        lang, source = Language(raw), _TS_QUERY
    elif language == "javascript":
        import tree_sitter_javascript

        lang, source = Language(tree_sitter_javascript.language()), _JS_QUERY
    else:
        raise ValueError(f"no grammar for {language}")
    return Parser(lang), Query(lang, source)


def parse_symbols(source: bytes, language: str, *, cell: Cell | None = None) -> list[SymbolDef]:
    """The definitions in `source` (UTF-8), in document order. A syntax error costs the broken part only:
    tree-sitter recovers and the definitions around it are still found."""
    from tree_sitter import QueryCursor

    parser, query = _grammar(language)
    tree = parser.parse(source)
    found: list[SymbolDef] = []
    seen: set[int] = set()
    for _pattern, captures in QueryCursor(query).matches(tree.root_node):
        defs, names = captures.get("def"), captures.get("name")
        if not defs or not names:
            continue
        node, name_node = defs[0], names[0]
        if node.id in seen:
            continue
        seen.add(node.id)
        name = _text(source, name_node)
        if not name:
            continue
        kind = _KINDS.get(node.type, "function")
        if node.type == "function_definition" and _in_class(node):
            kind = "method"
        start = node.start_point
        end = node.end_point
        found.append(SymbolDef(
            name=name, kind=kind, container=_container(node, source), start_line=start.row + 1,
            start_col=start.column + 1, end_line=end.row + 1, end_col=end.column + 1,
            signature=_signature(node, source),
            cell_index=cell.index if cell is not None else None, cell_id=cell.id if cell is not None else None,
        ))
    found.sort(key=lambda s: (s.start_line, s.start_col))
    return found


def _text(source: bytes, node: Any) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _in_class(node: Any) -> bool:
    """A Python ``def`` directly in a class body (decorated or not)."""
    parent = node.parent
    if parent is not None and parent.type == "decorated_definition":
        parent = parent.parent
    return parent is not None and parent.type == "block" and parent.parent is not None \
        and parent.parent.type == "class_definition"


def _container(node: Any, source: bytes) -> str | None:
    """The dotted names of the definitions around `node` (``Outer.Inner`` for a method of a nested class)."""
    names: list[str] = []
    parent = node.parent
    while parent is not None:
        if parent.type in _NAMED_SCOPES or (parent.type == "variable_declarator" and _is_function_value(parent)):
            name_node = parent.child_by_field_name("name")
            if name_node is not None:
                names.append(_text(source, name_node))
        parent = parent.parent
    return ".".join(reversed(names)) or None


def _is_function_value(node: Any) -> bool:
    value = node.child_by_field_name("value")
    return value is not None and value.type in ("arrow_function", "function_expression")


def _signature(node: Any, source: bytes) -> str:
    """The definition's head on one line: from its start to its body (``def f(a, b) -> int:``,
    ``class A(Base):``, ``function f(a: number): string``, ``const f = (a) =>``), decorators first."""
    start = node.start_byte
    body = node.child_by_field_name("body")
    prefix = ""
    if node.type in ("variable_declarator", "public_field_definition", "field_definition"):
        value = node.child_by_field_name("value")
        body = value.child_by_field_name("body") if value is not None else None
        decl = node.parent
        if node.type == "variable_declarator" and decl is not None and decl.type in ("lexical_declaration",
                                                                                     "variable_declaration"):
            prefix = _text(source, decl.children[0]) + " " if decl.children else ""
    end = body.start_byte if body is not None and body.start_byte > start else node.end_byte
    head = source[start:end].decode("utf-8", "replace")
    if body is None:
        head = head.split("\n", 1)[0]
    head = prefix + _SPACE.sub(" ", head).strip().rstrip("{").rstrip()
    parent = node.parent
    if parent is not None and parent.type == "decorated_definition":
        decorators = [_SPACE.sub(" ", _text(source, c)).strip() for c in parent.children if c.type == "decorator"]
        head = " ".join([*decorators, head])
    elif parent is not None and parent.type == "export_statement":
        head = "export " + head
    elif parent is not None and parent.type in ("lexical_declaration", "variable_declaration") \
            and parent.parent is not None and parent.parent.type == "export_statement":
        head = "export " + head
    if len(head) > _SIGNATURE_CHARS:
        head = head[: _SIGNATURE_CHARS - 1] + "…"
    return head


_MAGIC = re.compile(r"^(\s*)([%!?])", re.MULTILINE)


def notebook_cells(data: bytes) -> list[Cell]:
    """The cells of an ``.ipynb`` (nbformat 4 JSON). Raises ``ValueError`` for anything that is not a notebook."""
    doc = json.loads(data)
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        raise ValueError("not a notebook")
    cells: list[Cell] = []
    for i, raw in enumerate(doc["cells"]):
        if not isinstance(raw, dict):
            continue
        source = raw.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        cell_id = raw.get("id")
        cells.append(Cell(index=i, id=cell_id if isinstance(cell_id, str) else None,
                          kind=str(raw.get("cell_type") or "code"), source=text))
    return cells


def cell_python(source: str) -> bytes:
    """A code cell as Python tree-sitter can read: IPython magics and shell escapes (``%time``, ``!pip``) become
    comments, so lines and columns stay where they were."""
    return _MAGIC.sub(lambda m: m.group(1) + "#", source).encode("utf-8", "surrogatepass")
