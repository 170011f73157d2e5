"""`amux memory sync`: a scope's history pushed to and fetched from a git remote the user
names, only when run (docs/sync.md "Sync").

The scope's history repository (`amux.memory.history`) is the local side: its `main` is
the Hub's commits. A remote holds one branch per scope, `amux/<binding>` (`amux/global`,
`amux/principal-<sha256>`). A sync, in the Hub (the only writer of its root):

1. fetches that branch with git's own transports (`git fetch`, any URL git takes: a
   path, file://, ssh://, user@host:path) into `refs/amux/sync/<remote>`;
2. merges per document from the common ancestor (git's merge base): a change on one
   side only is taken; a change on both is merged line by line by libgit2's three-way
   file merge; overlapping edits keep both: the local text stays at the path, the
   remote's is written beside it as `<name>.sync-conflict-<12 hex>.md`, which
   `amux memory doctor` lists until an upsert resolves it and a forget removes the copy;
   an edit against a deletion keeps the edit;
3. applies what changes through the store's own conditional writes (expected revision:
   what the local side held), so the secret guard, quotas and concurrent writers are
   checked as for any write; a refused or concurrently changed document is reported;
4. once every document is applied, records a merge commit (parents: the local head,
   the remote's) so the other side's next sync is a fast-forward, and only then
   pushes it (never forced), after checking that the secret guard accepts every text
   being pushed.

A SIGKILL at any point loses nothing acknowledged: writes are the store's (durable
when answered), the merge commit and the remote ref move only after them, and an
unfinished sync is done again by the next one (documents already applied are equal).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import threading
import urllib.parse
from pathlib import Path
from typing import Any

import pygit2

from amux import durable
from amux.errors import (
    AmuxError,
    InvalidArgument,
    NotFound,
    RevisionConflict,
    SecretDetected,
    SyncFailed,
)
from amux.memory import conflicts
from amux.memory.history import BRANCH, History
from amux.memory.revision import ABSENT, revision_of
from amux.memory.scope import Scope
from amux.memory.store import Store
from amux.memory.versions import Author

REMOTE_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,31}")
GIT_TIMEOUT_SECONDS = 300.0
_GIT_CONFIG = ("-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "core.fsmonitor=false",
               "-c", "core.hooksPath=/dev/null", "-c", "fetch.writeCommitGraph=false",
               "-c", "core.fsync=committed", "-c", "core.fsyncMethod=fsync",
               "-c", "protocol.ext.allow=never")

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def remote_branch(scope: Scope) -> str:
    return "refs/heads/amux/" + scope.binding.replace(":", "-")


def shown_url(url: str) -> str:
    """`url` without a user's password or token (as import shows a remote)."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urllib.parse.urlunsplit(parts._replace(netloc=host))


class Remotes:
    """The remotes of each scope: `<AMUX_HOME>/sync/<binding>.json` (0600), written only
    by the Hub for the scope's own principal with a login token."""

    def __init__(self, home: Path) -> None:
        self.dir = home / "sync"

    def _file(self, scope: Scope) -> Path:
        return self.dir / (scope.binding.replace(":", "-") + ".json")

    def load(self, scope: Scope) -> dict[str, str]:
        try:
            value = json.loads(self._file(scope).read_bytes())
        except FileNotFoundError:
            return {}
        return {str(key): str(url) for key, url in value.get("remotes", {}).items()}

    def _save(self, scope: Scope, remotes: dict[str, str]) -> None:
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            durable.write_atomic_at(fd, self._file(scope).name,
                                    json.dumps({"remotes": remotes}, sort_keys=True).encode())
        finally:
            os.close(fd)

    def add(self, scope: Scope, name: object, url: object) -> dict[str, Any]:
        name = check_remote_name(name)
        if not isinstance(url, str) or not url or url.startswith("-") or any(
                ord(char) < 32 for char in url):
            raise InvalidArgument("url must be a git URL or path (ssh://host/path, "
                                  "user@host:path, file:///path, /path)")
        if urllib.parse.urlsplit(url).password is not None:
            raise InvalidArgument("the url carries a password or token: amux stores no "
                                  "credentials; let git's ssh agent or credential helper "
                                  "give them (git config credential.helper)")
        remotes = self.load(scope)
        if name in remotes:
            raise InvalidArgument(f"remote {name} exists already: `amux memory remote "
                                  f"remove {name}` first")
        remotes[name] = url
        self._save(scope, remotes)
        return {"binding": scope.binding, "remote": name, "url": url, "added": True}

    def remove(self, scope: Scope, name: object) -> dict[str, Any]:
        name = check_remote_name(name)
        remotes = self.load(scope)
        if remotes.pop(name, None) is None:
            raise NotFound(f"no remote {name}: `amux memory remote list` shows them")
        self._save(scope, remotes)
        return {"binding": scope.binding, "remote": name, "removed": True}

    def listing(self, scope: Scope) -> dict[str, Any]:
        return {"binding": scope.binding, "branch": remote_branch(scope).removeprefix(
                    "refs/heads/"),
                "remotes": [{"name": name, "url": shown_url(url)}
                            for name, url in sorted(self.load(scope).items())]}


def check_remote_name(name: object) -> str:
    if not isinstance(name, str) or not REMOTE_NAME.fullmatch(name):
        raise InvalidArgument("a remote's name is 1-32 of a-z, 0-9, '.', '_', '-' "
                              "starting with a letter or digit, e.g. origin")
    return name


def _git(git_dir: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")
           or key in ("GIT_SSH_COMMAND", "GIT_SSH", "GIT_ASKPASS")}
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_DIR": git_dir, "LC_ALL": "C"})
    try:
        return subprocess.run(["git", *_GIT_CONFIG, *args], capture_output=True, text=True,
                              env=env, timeout=GIT_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL,
                              check=False)
    except subprocess.TimeoutExpired:
        raise SyncFailed(f"git {args[0]} took over {GIT_TIMEOUT_SECONDS:.0f} s") from None
    except FileNotFoundError:
        raise SyncFailed("git is not installed on the Hub's machine") from None


def _failed(done: subprocess.CompletedProcess[str], what: str, url: str) -> SyncFailed:
    message = (done.stderr or done.stdout).strip().replace(url, shown_url(url))
    return SyncFailed(f"{what} {shown_url(url)} failed: {message[-600:]}")


def _scope_lock(scope: Scope) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(scope.binding, threading.Lock())


def _flat(repo: pygit2.Repository, tree: pygit2.Tree | None) -> dict[str, pygit2.Oid]:
    if tree is None:
        return {}
    index = pygit2.Index()
    index.read_tree(tree)
    return {entry.path: entry.id for entry in index}


def _blob(repo: pygit2.Repository, oid: pygit2.Oid) -> bytes:
    blob = repo[oid]
    assert isinstance(blob, pygit2.Blob)
    return blob.data


def sync(store: Store, scope: Scope, remotes: Remotes, name: object, dry_run: bool,
         author: Author) -> dict[str, Any]:
    """One sync of `scope` with its remote `name` (None: its only one)."""
    configured = remotes.load(scope)
    if name is None:
        if not configured:
            raise InvalidArgument("no remote is configured for your memory: add one with "
                                  "`amux memory remote add NAME URL`")
        if len(configured) > 1:
            raise InvalidArgument(f"name the remote to sync with: one of "
                                  f"{', '.join(sorted(configured))}")
        name = next(iter(configured))
    name = check_remote_name(name)
    url = configured.get(name)
    if url is None:
        raise NotFound(f"no remote {name} for your memory: `amux memory remote add {name} "
                       "URL` adds it")
    history = store.history
    if not isinstance(history, History):
        raise InvalidArgument("this Hub keeps no memory history: sync needs it")
    with _scope_lock(scope):
        return _sync(store, history, scope, name, url, dry_run, author)


def _sync(store: Store, history: History, scope: Scope, name: str, url: str,
          dry_run: bool, author: Author) -> dict[str, Any]:
    history.flush()
    repo = history.repository(scope)
    git_dir = repo.git.path
    branch = remote_branch(scope)
    tracking = f"refs/amux/sync/{name}"
    with repo.lock:
        known = pygit2.Repository(git_dir).references.get(tracking) is not None
    # What the remote had at the last sync is all it needs to hear of: offering every
    # local commit (one per change) costs seconds for nothing.
    tip = ("--negotiation-tip", tracking) if known else ()
    fetched = _git(git_dir, "fetch", "--no-tags", "--no-write-fetch-head", "-q", *tip, "--",
                   url, f"+{branch}:{tracking}")
    if fetched.returncode == 0:
        with repo.lock:
            fetched_ref = pygit2.Repository(git_dir).references.get(tracking)
        remote_id: str | None = None if fetched_ref is None else str(fetched_ref.target)
    elif "couldn't find remote ref" in fetched.stderr:
        remote_id = None  # the remote has no branch of this scope yet: the first push
    else:
        raise _failed(fetched, "git fetch", url)
    report: dict[str, Any] = {"remote": name, "url": shown_url(url), "branch": branch,
                              "dry_run": dry_run, "applied": [], "conflicts": [],
                              "kept_edits": [], "refused": [], "changed_meanwhile": [],
                              "pushed": False}
    history.flush()
    with repo.lock:
        git = pygit2.Repository(git_dir)  # sees what git fetched
        local = None if git.head_is_unborn else git.head.peel(pygit2.Commit).id
        base = None
        if remote_id is not None and local is not None:
            base = git.merge_base(local, pygit2.Oid(hex=remote_id))
        plan = _plan(git, local, None if remote_id is None else pygit2.Oid(hex=remote_id),
                     base)
    report["fast_forward"] = remote_id is not None and base is not None and \
        local is not None and str(base) == str(local)
    source = f"sync {name}"
    writer = author._replace(source=source)
    for step in plan:
        entry = {key: value for key, value in step.items() if key not in ("data", "expected")}
        if dry_run:
            report[step["kind"]].append(entry)
            continue
        try:
            if step["kind"] == "kept_edits" and step.get("data") is None:
                report["kept_edits"].append(entry)
                continue
            if step.get("data") is None:
                store.forget(scope, step["path"], step["expected"], writer)
            else:
                written = store.upsert(scope, step["path"], step["data"], step["expected"],
                                       writer)
                entry["revision"] = written["revision"]
            report[step["kind"]].append(entry)
        except RevisionConflict as error:
            report["changed_meanwhile"].append({**entry, "error": error.to_wire()})
        except AmuxError as error:
            report["refused"].append({**entry, "error": error.to_wire()})
    if dry_run:
        return report
    complete = not report["refused"] and not report["changed_meanwhile"]
    if not complete:
        if report["refused"]:  # what the guard refused stays reachable from no ref here
            with repo.lock, contextlib.suppress(KeyError):
                pygit2.Repository(git_dir).references.delete(tracking)
        report["next"] = ("nothing was pushed: fix what is refused (on the side it came "
                          "from) or run `amux memory sync` again for what changed meanwhile")
        return report
    history.flush()
    with repo.lock:
        git = pygit2.Repository(git_dir)
        head = None if git.head_is_unborn else git.head.peel(pygit2.Commit).id
        if remote_id is not None and head == local and (local is None or base == local):
            # a fast-forward that wrote nothing: the remote's tree is ours already
            git.references.create(BRANCH, pygit2.Oid(hex=remote_id), force=True)
            head = pygit2.Oid(hex=remote_id)
            repo.git = git
            repo.discard()
            repo.forget_log()
        elif remote_id is not None and head is not None and \
                git.merge_base(head, pygit2.Oid(hex=remote_id)) != pygit2.Oid(hex=remote_id):
            head_commit = git[head]
            assert isinstance(head_commit, pygit2.Commit)
            who = pygit2.Signature(author.principal or "amux", f"{author.principal or 'amux'}"
                                   "@amux")
            message = (f"sync {name}\n\nAmux-Operation: sync\nAmux-Remote: {name}\n")
            merged = git.create_commit(None, who, who, message, head_commit.tree_id,
                                       [head, pygit2.Oid(hex=remote_id)])
            git.references.create(BRANCH, merged, force=True)
            head = merged
            repo.git = git
            repo.discard()
            repo.forget_log()
    if head is None or (remote_id is not None and str(head) == remote_id):
        report["pushed"] = False
        return report
    _check_push(store, scope, git_dir, head, remote_id)
    pushed = _git(git_dir, "push", "-q", "--", url, f"{head}:{branch}")
    if pushed.returncode != 0:
        raise _failed(pushed, "git push", url)
    with repo.lock:
        pygit2.Repository(git_dir).references.create(tracking, head, force=True)
    report["pushed"] = True
    report["commit"] = str(head)
    return report


def _plan(git: pygit2.Repository, local: pygit2.Oid | None, remote: pygit2.Oid | None,
          base: pygit2.Oid | None) -> list[dict[str, Any]]:
    """What the remote's side brings, per document, from the merge base."""
    if remote is None or (base is not None and str(base) == str(remote)):
        return []

    def tree(oid: pygit2.Oid | None) -> pygit2.Tree | None:
        if oid is None:
            return None
        commit = git[oid]
        assert isinstance(commit, pygit2.Commit)
        return commit.tree

    ours, theirs, ancestor = (_flat(git, tree(oid)) for oid in (local, remote, base))
    steps: list[dict[str, Any]] = []
    for path in sorted(ours.keys() | theirs.keys()):
        mine, other, old = ours.get(path), theirs.get(path), ancestor.get(path)
        if mine == other or other == old:
            continue
        expected = ABSENT if mine is None else revision_of(_blob(git, mine))
        if mine == old:  # changed on the remote's side only
            data = None if other is None else _blob(git, other)
            steps.append({"kind": "applied", "path": path, "data": data,
                          "expected": expected, "operation": "forget" if data is None
                          else "create" if mine is None else "update"})
        elif other is None:  # deleted there, edited here: the edit stays
            steps.append({"kind": "kept_edits", "path": path, "data": None,
                          "expected": expected, "deleted_on": "remote"})
        elif mine is None:  # deleted here, edited there: the edit comes back
            steps.append({"kind": "kept_edits", "path": path, "data": _blob(git, other),
                          "expected": expected, "deleted_on": "local"})
        else:
            result = git.merge_file_from_index(
                None if old is None else pygit2.IndexEntry(path, old, pygit2.enums.FileMode.BLOB),
                pygit2.IndexEntry(path, mine, pygit2.enums.FileMode.BLOB),
                pygit2.IndexEntry(path, other, pygit2.enums.FileMode.BLOB))
            if result.automergeable:
                steps.append({"kind": "applied", "path": path,
                              "data": result.contents.encode("utf-8"),
                              "expected": expected, "operation": "merge"})
            else:
                data = _blob(git, other)
                copy = conflicts.copy_path(path, revision_of(data))
                if ours.get(copy) == other:
                    continue
                steps.append({"kind": "conflicts", "path": copy, "data": data,
                              "expected": ABSENT if copy not in ours else
                              revision_of(_blob(git, ours[copy])), "of": path,
                              "fix": f"merge {copy} into {path} with an ordinary upsert, "
                                     f"then `amux memory forget {copy}`"})
    return steps


def _check_push(store: Store, scope: Scope, git_dir: str, head: pygit2.Oid,
                remote: str | None) -> None:
    """Refuse to push a text the secret guard would refuse to write: every version the
    push carries, not only the newest (a hand edit may have brought one in)."""
    git = pygit2.Repository(git_dir)
    walker = git.walk(head, pygit2.enums.SortMode.NONE)
    if remote is not None:
        walker.hide(pygit2.Oid(hex=remote))
    seen: set[pygit2.Oid] = set()
    for commit in walker:
        if len(commit.parents) > 1:
            continue  # a sync's merge commit brings no text of its own
        path = _path_of(commit.message)
        try:
            entry = commit.tree[path]
        except KeyError:
            continue
        if entry.id in seen or not isinstance(entry, pygit2.Blob):
            continue
        seen.add(entry.id)
        try:
            store.check_secrets(scope, entry.data)
        except SecretDetected as error:
            error.message = (f"not pushed: a version of {path} holds what the secret guard "
                             f"refuses; remove it, `amux memory purge {path}` (the owner), "
                             f"then sync again. {error.message}")
            raise


def _path_of(message: str) -> str:
    for line in message.splitlines():
        if line.startswith("Amux-Path: "):
            return line.removeprefix("Amux-Path: ")
    return ""
