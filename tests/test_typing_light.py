"""`amux.typing_light` makes the same records as `typing.NamedTuple` without importing it."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from amux.typing_light import NamedTuple, cast


class Point(NamedTuple):
    """A point."""

    x: int
    y: int = 0
    label: str = "p"

    @property
    def norm1(self) -> int:
        return abs(self.x) + abs(self.y)

    def moved(self, dx: int) -> Point:
        return self._replace(x=self.x + dx)


def test_a_record_is_a_namedtuple_with_its_defaults_methods_and_doc() -> None:
    point = Point(3)
    assert point == (3, 0, "p") and Point._fields == ("x", "y", "label")
    assert Point._field_defaults == {"y": 0, "label": "p"}
    assert point.norm1 == 3 and point.moved(2) == Point(5)
    assert point._asdict() == {"x": 3, "y": 0, "label": "p"}
    assert Point.__doc__ == "A point." and Point.__qualname__ == "Point"
    assert Point.__module__ == __name__ and pickle.loads(pickle.dumps(point)) == point
    value: object = 7
    assert isinstance(point, tuple) and cast(int, value) is value
    with pytest.raises(AttributeError):
        point.x = 1  # type: ignore[misc]


def test_a_field_without_default_after_one_with_it_is_refused() -> None:
    with pytest.raises(TypeError, match="without a default"):
        class Bad(NamedTuple):
            a: int = 0
            b: int  # type: ignore[misc]


def test_it_does_not_import_typing() -> None:
    code = "import sys, amux.typing_light; print('typing' in sys.modules)"
    done = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).parents[1])
    assert done.stdout.strip() == "False"
