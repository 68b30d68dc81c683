"""Deep merge of JSON-like dicts: the one rule config layers and provider request bodies share.

Later wins, objects merge key by key, anything else (arrays, scalars) replaces. Two places need two meanings for
``null``, and both follow the reference ECA server:

- **config layers** keep it (``none_deletes=False``): the merged config must still say "null" so the schema can
  read it as "back to the default" / "remove this entry", and so a model's ``extraPayload: {"stream_options": null}``
  survives layering and reaches the request it is meant for;
- **a request body** merged with ``extraPayload`` drops the key (``none_deletes=True``), so a config can remove a
  field a strict server rejects (the reference's ``shared/deep-merge`` does the same).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = ["deep_merge"]


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any], *, none_deletes: bool = False) -> dict[str, Any]:
    """A new dict: *override* over *base*. Dicts merge recursively; anything else replaces. A ``None`` in *override*
    replaces too, or, with *none_deletes*, removes the key.

    Inputs are never mutated and the result shares no mutable values with them.
    """
    result: dict[str, Any] = {k: copy.deepcopy(v) for k, v in base.items()}
    for key, value in override.items():
        current = result.get(key)
        if value is None and none_deletes:
            result.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(current, Mapping):
            result[key] = deep_merge(current, value, none_deletes=none_deletes)
        else:
            result[key] = copy.deepcopy(dict(value) if isinstance(value, Mapping) else value)
    return result
