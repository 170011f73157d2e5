"""What a launch creates, as data: the writers `apply` calls make their paths from the
`Write`s that list them (`state.writes`, `rundirs.writes`, and `mirrors.written` and
`planfiles.written` for the plan's mirrors and files), and `--dry-run` prints the same
`Write`s (`Launch.writes`)."""

from __future__ import annotations

from pathlib import Path

from amux.durable import write_file_atomic
from amux.typing_light import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal, TypeAlias

    Kind: TypeAlias = Literal["dir", "file", "link", "copy", "mirror"]


class Write(NamedTuple):
    """One path a launch creates (a directory: creates if missing)."""

    path: Path
    kind: Kind
    """`dir`, `file`, `link` (symbolic), `copy` (of an executable), `mirror`
    (`PlanMirror`: a directory of links)."""
    mode: int | None
    """Its permission bits; None for a link."""
    agents: bool = False
    """Owned by the user the agent runs as (an isolated run's target), not the launcher."""
    content: str | None = None
    """What it holds, in words (never a secret)."""
    text: str | None = None
    """What it holds, exactly (a plan's file that holds nothing of the user's own)."""

    @property
    def bits(self) -> int:
        """`mode`, of a path that has one."""
        assert self.mode is not None, self  # only a link has none
        return self.mode

    def make_dir(self, *, exist_ok: bool = False) -> None:
        """Create this directory at its mode; `exist_ok`: unless it exists, with any
        missing parents."""
        self.path.mkdir(mode=self.bits, parents=exist_ok, exist_ok=exist_ok)

    def write(self, data: bytes) -> None:
        """Write this file at its mode, temp-and-replace."""
        write_file_atomic(self.path, data, mode=self.bits)

    def shown(self, agents_user: str) -> dict[str, Any]:
        """As `--dry-run` prints it, `agents_user` naming the owner of the agent's paths."""
        shown: dict[str, Any] = {
            "path": str(self.path), "kind": self.kind,
            "mode": None if self.mode is None else f"{self.mode:04o}",
            "owner": agents_user if self.agents else "launcher"}
        if self.content is not None:
            shown["content"] = self.content
        if self.text is not None:
            shown["text"] = self.text
        return shown
