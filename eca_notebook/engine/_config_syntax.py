"""What a config layer may contain beyond plain JSON: comments and trailing commas, and ``${env:NAME}`` references.

The reference's docs show commented config files (its schema declares ``allowComments``), and its users put keys in
environment variables rather than in files; a server that rejected either would drop a user's whole file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["interpolate_env", "parse_jsonc"]


_ENV_REF = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}")


def interpolate_env(value: Any, env: Mapping[str, str], problems: list[str] | None = None) -> Any:
    """Replace ``${env:NAME}`` / ``${env:NAME:default}`` in every string of *value* (recursively; keys untouched).

    The default applies when NAME is unset or empty. An unset NAME without a default becomes ``""`` and, when
    *problems* is given, a message naming the variable (never a value) is appended once.
    """
    if isinstance(value, str):
        if "${env:" not in value:
            return value

        def replace(m: re.Match[str]) -> str:
            name, default = m.group(1), m.group(2)
            current = env.get(name)
            if current:
                return current
            if default is not None:
                return default
            if current is None and problems is not None:
                msg = f"environment variable {name} is not set (referenced as ${{env:{name}}}); using an empty string"
                if msg not in problems:
                    problems.append(msg)
            return ""

        return _ENV_REF.sub(replace, value)
    if isinstance(value, Mapping):
        return {k: interpolate_env(v, env, problems) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate_env(v, env, problems) for v in value]
    return value


def parse_jsonc(text: str) -> Any:
    """``json.loads`` that also accepts ``//`` and ``/* */`` comments and trailing commas.

    The reference's docs show commented config files and its schema declares ``allowComments``; rejecting them would
    drop a user's whole file. Comments become spaces so line/column numbers in error messages stay right.
    """
    if not text.strip():
        return {}
    return json.loads(_strip_jsonc(text))


def _strip_jsonc(text: str) -> str:
    out = list(text)
    n = len(text)
    i = 0
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_string = False
            i += 1
            continue
        if c == '"':
            in_string = True
        elif c == "/" and i + 1 < n and text[i + 1] == "/":
            while i < n and text[i] != "\n":
                out[i] = " "
                i += 1
            continue
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for j in range(i, end):
                if text[j] != "\n":
                    out[j] = " "
            i = end
            continue
        elif c == ",":
            j = i + 1
            while j < n:
                if text[j].isspace():
                    j += 1
                elif text.startswith("//", j):
                    nl = text.find("\n", j)
                    j = n if nl < 0 else nl
                elif text.startswith("/*", j):
                    end = text.find("*/", j + 2)
                    j = n if end < 0 else end + 2
                else:
                    break
            if j < n and text[j] in "}]":
                out[i] = " "
        i += 1
    return "".join(out)
