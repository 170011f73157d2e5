"""The files of the user an agent runs as: everything a launch reads or writes in that
user's home, or anywhere that user could have put something.

For the launching user's own agent these are plain calls. For an isolated run every one
of them is done by a helper process running as the target (`amux.materializer.helper`),
never by root: the target's home is the target's to change while root works in it, and
what the helper can do there is only what the target could. The operations are the same
functions either way; each takes and returns plain JSON values (bytes for file contents),
so they can cross to the helper.
"""

from __future__ import annotations

import fnmatch
import os
import stat
import time
from collections.abc import Sequence
from types import TracebackType

from amux.adapters.base import PlanFile, PlanMirror
from amux.launcher import mirrors, planfiles, readfile
from amux.materializer.target import Target
from amux.typing_light import cast

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from amux.materializer.helper import Helper

RECENT_CHANGE_SECONDS = 1.0
"""A file changed less than this long ago has no signature: a second change within the
file system's timestamp granularity (a few ms on ext4, 2 s on FAT) could leave its size
and times as they were, so an answer computed from it must not be remembered under them."""


class UserFiles:
    """One launch's access to its agent user's files (`of`); `close` ends the helper."""

    def __init__(self, helper: Helper | None = None) -> None:
        self._helper = helper

    @classmethod
    def of(cls, target: Target | None) -> UserFiles:
        """Here for the launching user; through a helper started now for `target`."""
        if target is None:
            return cls()
        from amux.materializer.helper import Helper  # sockets and the rest: isolated only

        return cls(Helper(target, OPERATIONS))

    def read_text(self, path: str) -> str | None:
        """The UTF-8 text of the regular file `path` (newlines as Python's text mode reads
        them), None when it does not exist; OSError (`readfile.Unreadable` for a FIFO, a
        device or more than `readfile.LIMIT`), UnicodeDecodeError otherwise."""
        data = self._call("read", path, readfile.LIMIT)
        if data is None:
            return None
        return cast(bytes, data).decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")

    def realpath(self, path: str) -> str:
        return cast(str, self._call("realpath", path))

    def list_dir(self, path: str) -> list[str] | None:
        return cast("list[str] | None", self._call("list_dir", path))

    def stat_signature(self, path: str) -> str | None:
        return cast("str | None", self._call("stat_signature", path))

    def make_dirs(self, path: str) -> None:
        """`path` and any missing parents, 0700."""
        self._call("make_dirs", path)

    def make_mirrors(self, plan: Sequence[PlanMirror]) -> list[str]:
        return cast("list[str]", self._call("make_mirrors", [list(m) for m in plan]))

    def restore_mirrors(self, plan: Sequence[PlanMirror],
                        files: Sequence[PlanFile] = ()) -> list[str]:
        return cast("list[str]", self._call("restore_mirrors", [list(m) for m in plan],
                                             [list(f) for f in files]))

    def write_files(self, files: Sequence[PlanFile]) -> None:
        self._call("write_files", [list(f) for f in files])

    def matching(self, directory: str, pattern: str) -> set[str]:
        """The regular files below `directory` whose name matches `pattern` (fnmatch)."""
        return set(cast("list[str]", self._call("matching", directory, pattern)))

    def first_line(self, path: str, limit: int) -> str:
        return cast(str, self._call("first_line", path, limit))

    def close(self) -> None:
        if self._helper is not None:
            self._helper.close()

    def __enter__(self) -> UserFiles:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def _call(self, op: str, *args: Any) -> Any:
        if self._helper is None:
            return OPERATIONS[op](*args)
        return self._helper.call(op, *args)


def list_dir(path: str) -> list[str] | None:
    """The names in directory `path`, sorted ([] when it does not exist); None when they
    cannot be read."""
    try:
        return sorted(os.listdir(path))
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError:
        return None


def stat_signature(path: str) -> str | None:
    """See `Probe.stat_signature`."""
    signed = []
    for follow in (False, True):  # the link itself, then what it names
        try:
            st = os.stat(path, follow_symlinks=follow)
        except (FileNotFoundError, NotADirectoryError):
            signed.append("absent")
            break
        except OSError:
            return None
        if stat.S_ISREG(st.st_mode) and time.time_ns() - max(
                st.st_mtime_ns, st.st_ctime_ns) < RECENT_CHANGE_SECONDS * 1e9:
            return None
        signed.append(_signature(st))
        if not stat.S_ISLNK(st.st_mode):
            break
    return "|".join(signed)


def _signature(st: os.stat_result) -> str:
    kind = stat.S_IFMT(st.st_mode)
    own = f"{kind:o}:{stat.S_IMODE(st.st_mode):o}:{st.st_dev}:{st.st_ino}"
    if stat.S_ISDIR(st.st_mode):  # its entries that matter are signed on their own
        return own
    return f"{own}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def matching(directory: str, pattern: str) -> list[str]:
    """See `UserFiles.matching`; no link to a directory is followed."""
    found = []
    for top, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(top, name)
            try:
                if fnmatch.fnmatch(name, pattern) and stat.S_ISREG(os.lstat(path).st_mode):
                    found.append(path)
            except OSError:  # gone meanwhile
                continue
    return sorted(found)


def _make_dirs(path: str) -> None:
    """`path` and any missing parents, 0700 (`os.makedirs` makes the parents as the umask
    leaves them)."""
    parent = os.path.dirname(path)
    if parent != path and not os.path.isdir(parent):
        _make_dirs(parent)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        if not os.path.isdir(path):
            raise


def _mirrors(plan: Sequence[Sequence[Any]]) -> list[PlanMirror]:
    return [PlanMirror(str(path), str(source), tuple(own)) for path, source, own in plan]


def _files(files: Sequence[Sequence[Any]]) -> list[PlanFile]:
    return [PlanFile(str(path), str(text), int(mode), bool(private))
            for path, text, mode, private in files]


OPERATIONS: dict[str, Any] = {
    "read": lambda path, limit: readfile.read_bytes(path, limit),
    "realpath": os.path.realpath,
    "list_dir": list_dir,
    "stat_signature": stat_signature,
    "make_dirs": _make_dirs,
    "make_mirrors": lambda plan: mirrors.make(_mirrors(plan)),
    "restore_mirrors": lambda plan, files: mirrors.restore(_mirrors(plan), _files(files)),
    "write_files": lambda files: planfiles.write(_files(files)),
    "matching": matching,
    "first_line": readfile.first_line,
}
"""Every operation a launch does in its agent user's files, by name."""
