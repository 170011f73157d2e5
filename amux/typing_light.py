"""`NamedTuple`, `Protocol` and `cast` as `typing` spells them, without importing `typing`.

`typing` costs every process that imports it ~5 ms, and its `NamedTuple` compiles each
field's annotation again; `amux run` pays that before the agent starts, and the MCP server
and the CLI before their first answer. mypy reads `typing`'s own; at run time these are:

- `NamedTuple`: the class syntax (`class Point(NamedTuple): x: int; y: int = 0`) made
  into `collections.namedtuple(...)`, with the class body's methods, properties and
  docstring, as `typing.NamedTuple` makes it;
- `Protocol`: a plain base, since nothing checks structural types at run time;
- `cast`: its value.

Names only annotations use (`Any`, `Literal`, …) come from `typing` under `TYPE_CHECKING`.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
    from typing import Protocol as Protocol
    from typing import cast as cast
else:
    import collections

    _MADE_BY_NAMEDTUPLE = frozenset({"__module__", "__qualname__", "__annotations__"})

    class _NamedTupleMeta(type):
        def __new__(mcs, name, bases, namespace):
            if not bases:  # `NamedTuple` itself
                return super().__new__(mcs, name, bases, namespace)
            annotations = namespace.get("__annotations__", {})
            fields = tuple(annotations)
            defaults = [namespace[field] for field in fields if field in namespace]
            if any(field not in namespace for field in fields[len(fields) - len(defaults):]):
                raise TypeError(f"{name}: a field without a default follows one with it")
            record = collections.namedtuple(name, fields, defaults=defaults,
                                            module=namespace["__module__"])
            record.__annotations__ = dict(annotations)
            record.__qualname__ = namespace["__qualname__"]
            for key, value in namespace.items():
                if key not in _MADE_BY_NAMEDTUPLE and key not in fields:
                    setattr(record, key, value)
            return record

    class NamedTuple(metaclass=_NamedTupleMeta):
        __slots__ = ()

    class Protocol:
        __slots__ = ()

    def cast(kind, value):
        return value
