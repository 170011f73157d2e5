"""Git objects made in memory and written as one pack: how memory history stays cheap.

libgit2 writes every new object as a loose file of its own, each fsynced with its
directory: a change of `notes/a.md` (a blob, two trees, a commit, the ref) cost about
eight fsyncs, 7–10 ms of disk time per change. History instead builds a batch's objects
here (blob, tree and commit bytes and their SHA-1 ids, as git spells them) and writes
them as one pack with its index (the format `git fetch` writes; git, libgit2 and every
git tool read it): a burst of any number of changes costs three fsyncs, plus the ref.
`_Repo` merges small packs into one now and then (libgit2's pack builder, with deltas),
so their number stays bounded.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from collections.abc import Mapping
from pathlib import Path

COMMIT, TREE, BLOB = 1, 2, 3
"""Pack object types (git's numbering)."""
_KINDS = {COMMIT: b"commit", TREE: b"tree", BLOB: b"blob"}
_IDX_MAGIC = b"\377tOc"
_NOT_IN_SIGNATURES = {ord(c): None for c in "<>\n"}


def object_id(kind: int, data: bytes) -> bytes:
    """The raw SHA-1 git names the object by."""
    digest = hashlib.sha1(b"%s %d\0" % (_KINDS[kind], len(data)), usedforsecurity=False)
    digest.update(data)
    return digest.digest()


def tree(entries: Mapping[str, tuple[bool, bytes]]) -> bytes:
    """A tree object's bytes from name → (is a tree, raw id), in git's order (a tree's
    name sorts as if it ended in "/")."""
    def key(item: tuple[str, tuple[bool, bytes]]) -> bytes:
        name, (is_tree, _) = item
        return name.encode() + (b"/" if is_tree else b"")

    return b"".join((b"40000 " if is_tree else b"100644 ") + name.encode() + b"\0" + raw
                    for name, (is_tree, raw) in sorted(entries.items(), key=key))


def signature(name: str, email: str, at: int, offset_minutes: int) -> bytes:
    """`Name <email> 1733150000 +0000`, as an author or committer line holds it."""
    sign = "-" if offset_minutes < 0 else "+"
    hours, minutes = divmod(abs(offset_minutes), 60)
    clean = name.translate(_NOT_IN_SIGNATURES) or "unknown"
    return (f"{clean} <{email.translate(_NOT_IN_SIGNATURES)}> {at} "
            f"{sign}{hours:02d}{minutes:02d}").encode()


def commit(tree_id: bytes, parent: bytes | None, author: bytes, committer: bytes,
           message: str) -> bytes:
    """A commit object's bytes."""
    lines = [b"tree " + tree_id.hex().encode()]
    if parent is not None:
        lines.append(b"parent " + parent.hex().encode())
    lines += [b"author " + author, b"committer " + committer]
    return b"\n".join(lines) + b"\n\n" + message.encode()


def write(directory: Path, objects: Mapping[bytes, tuple[int, bytes]]) -> Path:
    """Write `objects` (raw id → (type, bytes)) as one durable pack in `directory`
    (`objects/pack`): the pack and its index each fsynced, the index renamed into place
    last (readers find a pack by its index), then the directory fsynced. The pack's
    path."""
    ids = sorted(objects)
    pack = bytearray(struct.pack(">4sII", b"PACK", 2, len(ids)))
    offsets: list[int] = []
    crcs: list[int] = []
    for raw in ids:
        kind, data = objects[raw]
        if len(pack) >= 1 << 31:
            raise ValueError("a history batch over 2 GiB")  # the writer's batches are far less
        offsets.append(len(pack))
        entry = _entry_header(kind, len(data)) + zlib.compress(data, 1)
        crcs.append(zlib.crc32(entry))
        pack += entry
    checksum = hashlib.sha1(pack, usedforsecurity=False).digest()
    pack += checksum
    fanout = [0] * 256
    for raw in ids:
        fanout[raw[0]] += 1
    total = 0
    for first in range(256):
        total += fanout[first]
        fanout[first] = total
    index = bytearray(_IDX_MAGIC + struct.pack(">I", 2))
    index += struct.pack(">256I", *fanout)
    index += b"".join(ids)
    index += struct.pack(f">{len(ids)}I", *crcs)
    index += struct.pack(f">{len(ids)}I", *offsets)
    index += checksum
    index += hashlib.sha1(index, usedforsecurity=False).digest()
    name = f"pack-{checksum.hex()}"
    _durable(directory, name + ".pack", pack)
    _durable(directory, name + ".idx", index)
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return directory / (name + ".pack")


def ids_in(index_file: Path) -> list[bytes]:
    """The raw ids a pack holds, read from its version-2 index."""
    data = index_file.read_bytes()
    if data[:4] != _IDX_MAGIC or data[4:8] != struct.pack(">I", 2):
        raise ValueError(f"{index_file}: not a version-2 pack index")
    count = struct.unpack_from(">I", data, 8 + 255 * 4)[0]
    start = 8 + 256 * 4
    return [data[start + 20 * i:start + 20 * (i + 1)] for i in range(count)]


def _entry_header(kind: int, size: int) -> bytes:
    """Type and size, in the pack's variable-length encoding."""
    out = bytearray()
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def _durable(directory: Path, name: str, data: bytearray) -> None:
    temp = directory / f"tmp_{name}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW,
                 0o400)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(temp, directory / name)

