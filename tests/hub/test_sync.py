"""`amux memory sync` between two amux homes (two real Hubs) through a bare git repository
(docs/sync.md "Sync"): real git, real Hubs, no mock of amux."""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.hubproc import Caller, HubProcess, amux

pytestmark = pytest.mark.timeout(300)

SECRET = "deploy with AKIAIOSFODNN7EXAMPLF\n"


class Side:
    """One amux home with its running Hub, memory on."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.hub = HubProcess(home)
        self.hub.call("/v1/admin/config", {"action": "set", "key": "memory.enabled",
                                           "value": "true"})

    def restart(self) -> None:
        self.hub = HubProcess(self.home)

    def call(self, path: str, body: dict[str, Any]) -> Any:
        status, answer = self.hub.call(path, body)
        assert status == 200, answer
        return answer

    def write(self, path: str, text: str) -> str:
        current = self.revision(path)
        return str(self.call("/v1/memory/upsert", {"path": path, "content": text,
                                                   "expected_revision": current})["revision"])

    def forget(self, path: str) -> None:
        self.call("/v1/memory/forget", {"path": path, "expected_revision": self.revision(path)})

    def revision(self, path: str) -> str:
        for document in self.documents():
            if document["path"] == path:
                return str(document["revision"])
        return "absent"

    def documents(self) -> list[dict[str, Any]]:
        return list(self.call("/v1/memory/list", {"limit": 1000})["documents"])

    def texts(self) -> dict[str, str]:
        root = self.home / "memory" / "global"
        if not root.exists():
            return {}
        return {str(path.relative_to(root)): path.read_text() for path in root.rglob("*.md")
                if not path.name.startswith(".")}

    def sync(self, **body: Any) -> Any:
        """A sync on a connection of its own that waits minutes for its answer."""
        caller = Caller(self.hub.socket_path, self.hub.owner_token)
        try:
            caller.connection.connect()
            assert caller.connection.sock is not None
            caller.connection.sock.settimeout(280)
            status, answer = caller.call("/v1/memory/sync", body)
        finally:
            caller.close()
        assert status == 200, answer
        return answer

    def fsck(self) -> None:
        git_dir = self.home / "history" / "global.git"
        done = subprocess.run(["git", "--git-dir", str(git_dir), "fsck", "--strict"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr + done.stdout


@pytest.fixture
def world() -> Iterator[tuple[Side, Side, Path]]:
    directory = Path(tempfile.mkdtemp(prefix="amux-sync-", dir="/tmp"))
    bare = directory / "shared.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True, timeout=30)
    sides: list[Side] = []
    try:
        for name in ("a", "b"):
            side = Side(directory / name)
            sides.append(side)
            side.call("/v1/memory/remotes", {"action": "add", "name": "origin",
                                             "url": str(bare)})
        yield sides[0], sides[1], bare
    finally:
        for side in sides:
            side.hub.stop()
        shutil.rmtree(directory, ignore_errors=True)


def _bare_fsck(bare: Path) -> None:
    done = subprocess.run(["git", "--git-dir", str(bare), "fsck", "--strict"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def _round(a: Side, b: Side) -> None:
    """a, b, a: both sides hold the same documents afterwards."""
    a.sync()
    b.sync()
    a.sync()


def test_different_documents_travel_both_ways(world: tuple[Side, Side, Path]) -> None:
    a, b, bare = world
    a.write("a.md", "from a\n")
    first = a.sync()
    assert first["pushed"] is True
    b.write("b.md", "from b\n")
    second = b.sync()
    assert [entry["path"] for entry in second["applied"]] == ["a.md"]
    assert second["pushed"] is True
    a.sync()
    assert a.texts() == b.texts() == {"a.md": "from a\n", "b.md": "from b\n"}
    again = b.sync()
    assert again["applied"] == [] and again["pushed"] is False  # converged: nothing to do
    log = a.call("/v1/memory/log", {"path": "b.md"})["changes"]
    assert any(change.get("source") == "sync origin" for change in log)
    for side in (a, b):
        side.fsck()
    _bare_fsck(bare)


def test_same_document_merged_or_both_kept(world: tuple[Side, Side, Path]) -> None:
    a, b, _ = world
    lines = [f"line {n}\n" for n in range(10)]
    a.write("n.md", "".join(lines))
    a.write("c.md", "one\n")
    _round(a, b)
    a.write("n.md", "".join(["LINE 0 by a\n", *lines[1:]]))
    b.write("n.md", "".join([*lines[:9], "LINE 9 by b\n"]))
    a.write("c.md", "one, said a\n")
    b.write("c.md", "one, said b\n")
    a.sync()
    report = b.sync()
    assert [entry["path"] for entry in report["applied"]] == ["n.md"]
    (conflict,) = report["conflicts"]
    assert conflict["of"] == "c.md" and ".sync-conflict-" in conflict["path"]
    a.sync()
    merged = "".join(["LINE 0 by a\n", *lines[1:9], "LINE 9 by b\n"])
    for side in (a, b):
        texts = side.texts()
        assert texts["n.md"] == merged
        assert texts["c.md"] == "one, said b\n"  # b synced second: its text stays
        assert texts[conflict["path"]] == "one, said a\n"  # and a's beside it
    doctor = b.call("/v1/memory/doctor", {})
    assert conflict["path"] in str(doctor)
    # resolved by an ordinary upsert and a forget; that travels too
    b.write("c.md", "one, said both\n")
    b.forget(conflict["path"])
    _round(b, a)
    assert a.texts() == b.texts()
    assert a.texts()["c.md"] == "one, said both\n"
    assert conflict["path"] not in str(a.call("/v1/memory/doctor", {}))


def test_delete_against_edit_keeps_the_edit_and_restore_travels(
        world: tuple[Side, Side, Path]) -> None:
    a, b, _ = world
    a.write("x.md", "x1\n")
    a.write("y.md", "y1\n")
    _round(a, b)
    a.forget("x.md")
    b.write("x.md", "x2 edited on b\n")
    b.forget("y.md")
    a.write("y.md", "y2 edited on a\n")
    _round(a, b)
    for side in (a, b):
        assert side.texts() == {"x.md": "x2 edited on b\n", "y.md": "y2 edited on a\n"}
    # a deletion on one side alone travels; a restore brings it back everywhere
    old = a.revision("x.md")
    a.forget("x.md")
    _round(a, b)
    assert "x.md" not in b.texts()
    b.call("/v1/memory/restore", {"path": "x.md", "revision": old,
                                  "expected_revision": "absent"})
    _round(b, a)
    assert a.texts()["x.md"] == "x2 edited on b\n"


def test_a_secret_arriving_is_refused_and_none_pushed(
        world: tuple[Side, Side, Path], tmp_path: Path) -> None:
    a, b, bare = world
    a.write("ok.md", "fine\n")
    a.sync()
    # someone pushes a secret into the remote with plain git: a's sync refuses it
    clone = tmp_path / "clone"
    git = ["git", "-c", "user.name=p", "-c", "user.email=p@x", "-C", str(clone)]
    subprocess.run(["git", "clone", "-q", "-b", "amux/global", str(bare), str(clone)],
                   check=True, timeout=60)
    (clone / "ok.md").write_text(SECRET)
    subprocess.run([*git, "commit", "-qam", "x"], check=True, timeout=30)
    subprocess.run([*git, "push", "-q"], check=True, timeout=30)
    report = a.sync()
    (refused,) = report["refused"]
    assert refused["path"] == "ok.md" and refused["error"]["error"]["code"] == "secret_detected"
    assert report["pushed"] is False and a.texts()["ok.md"] == "fine\n"
    refs = subprocess.run(["git", "--git-dir", str(a.home / "history" / "global.git"),
                           "for-each-ref", "refs/amux/"], capture_output=True, text=True,
                          timeout=30).stdout
    assert refs == ""  # the refused text is reachable from no ref of a's history
    # a secret written on b's disk by hand (outside the Hub) is never pushed
    b.hub.stop()
    (b.home / "memory" / "global").mkdir(parents=True)
    (b.home / "memory" / "global" / "hand.md").write_text(SECRET)
    b.restart()
    deadline = time.monotonic() + 30
    while not b.hub.call("/v1/status", {})[1].get("history_caught_up"):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    report = b.sync(remote="origin")  # the remote's secret refused here too: no push
    assert [entry["path"] for entry in report["refused"]] == ["ok.md"]
    assert report["pushed"] is False
    fresh = tmp_path / "fresh.git"
    subprocess.run(["git", "init", "-q", "--bare", str(fresh)], check=True, timeout=30)
    b.call("/v1/memory/remotes", {"action": "add", "name": "fresh", "url": str(fresh)})
    status, error = b.hub.call("/v1/memory/sync", {"remote": "fresh"})
    assert status == 422 and error["error"]["code"] == "secret_detected", error
    assert "AKIA" not in error["error"]["message"]
    for repository in (bare, fresh):
        shown = subprocess.run(["git", "--git-dir", str(repository), "log", "-p", "--all"],
                               capture_output=True, text=True, timeout=30).stdout
        assert "hand.md" not in shown


def test_principal_scope_needs_its_own_remote(world: tuple[Side, Side, Path]) -> None:
    a, _, bare = world
    a.call("/v1/admin/config", {"action": "set", "key": "isolation.enabled", "value": "true"})
    issued = a.call("/v1/admin/principals", {"action": "add", "name": "bob"})
    token = issued["token"]
    status, answer = a.hub.call("/v1/memory/upsert", {"path": "p.md", "content": "bob's\n",
                                                      "expected_revision": "absent"}, token)
    assert status == 200, answer
    status, answer = a.hub.call("/v1/memory/sync", {}, token)
    assert status == 400 and "remote add" in answer["error"]["message"]
    refs = subprocess.run(["git", "--git-dir", str(bare), "for-each-ref"], capture_output=True,
                          text=True, timeout=30).stdout
    assert "principal" not in refs
    delegated = a.call("/v1/admin/principals", {"action": "delegate", "name": "bob"})["token"]
    status, answer = a.hub.call("/v1/memory/remotes", {"action": "add", "name": "x",
                                                       "url": str(bare)}, delegated)
    assert status == 403  # an agent's delegated token cannot send memory elsewhere
    status, answer = a.hub.call("/v1/memory/sync", {}, delegated)
    assert status == 403
    # bob's own remote carries bob's scope, to its own branch; the owner's sync never does
    own = bare.with_name("bob.git")
    subprocess.run(["git", "init", "-q", "--bare", str(own)], check=True, timeout=30)
    status, answer = a.hub.call("/v1/memory/remotes", {"action": "add", "name": "mine",
                                                       "url": str(own)}, token)
    assert status == 200, answer
    status, answer = a.hub.call("/v1/memory/sync", {}, token)
    assert status == 200 and answer["pushed"] is True, answer
    status, answer = a.hub.call("/v1/memory/sync", {"remote": "origin"})  # the owner's
    assert status == 404  # the owner's scope is its own too now (isolation on)
    refs = subprocess.run(["git", "--git-dir", str(own), "for-each-ref", "--format",
                           "%(refname)"], capture_output=True, text=True, timeout=30).stdout
    assert refs.split() == [answer_branch(a, token)]
    refs = subprocess.run(["git", "--git-dir", str(bare), "for-each-ref"], capture_output=True,
                          text=True, timeout=30).stdout
    assert "principal" not in refs


def answer_branch(side: Side, token: str) -> str:
    status, listed = side.hub.call("/v1/memory/remotes", {"action": "list"}, token)
    assert status == 200
    return "refs/heads/" + str(listed["branch"])


def test_a_thousand_documents_both_ways(world: tuple[Side, Side, Path]) -> None:
    a, b, bare = world
    texts = {f"many/n{number:04d}.md": f"note {number} v1\n" for number in range(1000)}
    for path, text in texts.items():
        a.call("/v1/memory/upsert", {"path": path, "content": text,
                                     "expected_revision": "absent"})
    a.sync()
    started = time.monotonic()
    report = b.sync()
    assert len(report["applied"]) == 1000, time.monotonic() - started
    assert b.texts() == texts
    revisions = {document["path"]: document["revision"] for document in b.documents()}
    edited = {path: text.replace("v1", "v2 by b") for path, text in texts.items()}
    for path, text in edited.items():
        b.call("/v1/memory/upsert", {"path": path, "content": text,
                                     "expected_revision": revisions[path]})
    b.sync()
    assert len(a.sync()["applied"]) == 1000
    assert a.texts() == b.texts() == edited
    for side in (a, b):
        side.fsck()
    _bare_fsck(bare)


def test_a_sigkill_mid_sync_loses_nothing(world: tuple[Side, Side, Path]) -> None:
    """The receiving Hub killed while it applies 900 documents (room is left in the
    scope's quota of 1,024 for its own writes), with writes of its own
    acknowledged meanwhile: after a restart and another sync, every acknowledged text
    is on both sides, and git fsck is clean on both sides and the remote."""
    a, b, bare = world
    texts = {f"many/n{number:04d}.md": f"note {number}\n" for number in range(900)}
    for path, text in texts.items():
        a.call("/v1/memory/upsert", {"path": path, "content": text,
                                     "expected_revision": "absent"})
    a.sync()
    acknowledged: dict[str, str] = {}

    def syncing() -> None:
        other = Caller(b.hub.socket_path, b.hub.owner_token)
        try:
            other.call("/v1/memory/sync", {})
        except OSError:
            pass  # killed: no answer
        finally:
            other.close()

    thread = threading.Thread(target=syncing)
    thread.start()
    scope = b.home / "memory" / "global" / "many"
    deadline = time.monotonic() + 120
    number = 0
    while not scope.exists() or len(list(scope.iterdir())) < 300:
        assert time.monotonic() < deadline
        path = f"mine/m{number}.md"
        status, _ = b.hub.call("/v1/memory/upsert", {"path": path,
                                                     "content": f"mine {number}\n",
                                                     "expected_revision": "absent"})
        if status == 200:
            acknowledged[path] = f"mine {number}\n"
        number += 1
        time.sleep(0.05)  # a person's pace, not a flood that keeps history's queue full
    b.hub.process.send_signal(signal.SIGKILL)
    b.hub.process.wait(timeout=30)
    b.hub.stop()  # collects it and closes its pipes
    thread.join(timeout=60)
    assert acknowledged
    b.restart()
    deadline = time.monotonic() + 60
    while not b.hub.call("/v1/status", {})[1].get("history_caught_up"):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    b.sync()
    a.sync()
    want = {**texts, **acknowledged}
    assert a.texts() == b.texts() == want
    for side in (a, b):
        side.fsck()
    _bare_fsck(bare)


def test_the_cli(world: tuple[Side, Side, Path]) -> None:
    a, b, bare = world
    code, out, err = amux(a.home, "memory", "remote", "list")
    assert code == 0 and out["remotes"] == [{"name": "origin", "url": str(bare)}], err
    code, out, err = amux(a.home, "memory", "remote", "add", "t",
                          "https://me:tok3n@example.com/x.git")
    assert code == 2 and "credential" in out["error"]["message"] and "tok3n" not in err
    code, out, _ = amux(a.home, "memory", "remote", "remove", "origin")
    assert code == 0 and out["removed"] is True
    code, out, err = amux(a.home, "memory", "sync")
    assert code == 2 and "amux memory remote add NAME URL" in out["error"]["message"]
    assert amux(a.home, "memory", "remote", "add", "origin", str(bare))[0] == 0
    a.write("a.md", "from a\n")
    code, out, err = amux(a.home, "memory", "sync", "--dry-run")
    assert code == 0 and out["dry_run"] is True and out["pushed"] is False, err
    code, out, err = amux(a.home, "memory", "sync", "origin")
    assert code == 0 and out["pushed"] is True, err
    code, out, _ = amux(b.home, "memory", "sync", "--dry-run")
    assert [entry["path"] for entry in out["applied"]] == ["a.md"] and "a.md" not in b.texts()
    code, out, _ = amux(b.home, "memory", "sync", "nowhere")
    assert code == 1 and "remote add nowhere" in out["error"]["message"]
    code, out, _ = amux(b.home, "memory", "remote", "add", "gone", "/nonexistent/x.git")
    code, out, err = amux(b.home, "memory", "sync", "gone")
    assert code == 9 and out["error"]["code"] == "sync_failed", err
    code, out, err = amux(b.home, "memory", "sync", "--help")
    assert code == 0 and "sync-conflict" in (out if isinstance(out, str) else err)


@pytest.fixture
def sshd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, int]]:
    """An sshd of this test's own on loopback (Debian's openssh-server, installed here
    when missing and the test runs as root, as CI does), a throwaway key, and the
    GIT_SSH_COMMAND the Hubs inherit; (user, port). Killed at the end."""
    import getpass
    import os
    import socket

    if shutil.which("sshd") is None and not Path("/usr/sbin/sshd").exists():
        if os.geteuid() != 0:
            pytest.skip("no sshd and not root to install openssh-server")
        subprocess.run(["apt-get", "install", "-y", "-q", "openssh-server"],
                       capture_output=True, timeout=600, check=True)
    keys = tmp_path / "ssh"
    keys.mkdir(mode=0o700)
    for name in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                        str(keys / name)], check=True, timeout=30)
    (keys / "authorized").write_text((keys / "client.pub").read_text())
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (keys / "sshd_config").write_text(
        f"ListenAddress 127.0.0.1\nPort {port}\nHostKey {keys / 'host'}\n"
        f"AuthorizedKeysFile {keys / 'authorized'}\nStrictModes no\nUsePAM no\n"
        f"PasswordAuthentication no\nPidFile {keys / 'pid'}\nPermitRootLogin "
        "prohibit-password\n")
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    daemon = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", str(keys / "sshd_config")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert daemon.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        monkeypatch.setenv("GIT_SSH_COMMAND", (
            f"ssh -F /dev/null -i {keys / 'client'} -o IdentitiesOnly=yes "
            f"-o UserKnownHostsFile={keys / 'known_hosts'} "
            "-o StrictHostKeyChecking=accept-new -o BatchMode=yes"))
        yield getpass.getuser(), port
    finally:
        daemon.kill()
        daemon.communicate(timeout=30)


def test_sync_over_ssh(sshd: tuple[str, int], tmp_path: Path) -> None:
    """Two homes through a bare repository reached over ssh to this machine."""
    user, port = sshd
    bare = tmp_path / "over-ssh.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True, timeout=30)
    directory = Path(tempfile.mkdtemp(prefix="amux-ssh-", dir="/tmp"))
    sides: list[Side] = []
    try:
        for name in ("a", "b"):
            sides.append(Side(directory / name))
            sides[-1].call("/v1/memory/remotes", {
                "action": "add", "name": "team", "url": f"ssh://{user}@127.0.0.1:{port}{bare}"})
        a, b = sides
        a.write("shared.md", "one\ntwo\nthree\n")
        a.sync()
        b.sync()
        a.write("shared.md", "ONE\ntwo\nthree\n")
        b.write("shared.md", "one\ntwo\nTHREE\n")
        b.write("b.md", "b's\n")
        _round(a, b)
        assert a.texts() == b.texts() == {"shared.md": "ONE\ntwo\nTHREE\n", "b.md": "b's\n"}
        for side in sides:
            side.fsck()
        _bare_fsck(bare)
    finally:
        for side in sides:
            side.hub.stop()
        shutil.rmtree(directory, ignore_errors=True)


def test_a_purge_after_sync_rewrites_history_and_sync_still_converges(
        world: tuple[Side, Side, Path]) -> None:
    """A purge makes the history anew (no merge commits, other commits): the next sync finds
    no common ancestor, meets equal texts as equal and loses nothing."""
    a, b, bare = world
    a.write("p.md", "first\n")
    old = a.revision("p.md")
    a.write("p.md", "second\n")
    b.write("q.md", "from b\n")
    _round(a, b)
    purged = a.call("/v1/admin/history", {"action": "purge", "path": "p.md",
                                          "revision": old})
    assert purged
    a.write("r.md", "after the purge\n")
    _round(a, b)
    assert a.texts() == b.texts() == {"p.md": "second\n", "q.md": "from b\n",
                                      "r.md": "after the purge\n"}
    for side in (a, b):
        side.fsck()
    _bare_fsck(bare)


def test_a_document_written_during_a_sync_is_never_overwritten(
        world: tuple[Side, Side, Path]) -> None:
    """An agent writes a document a running sync is about to write: the agent's write
    stands, the sync reports it (`changed_meanwhile`) and pushes nothing; the next sync
    keeps both texts."""
    a, b, _ = world
    for number in range(400):
        a.call("/v1/memory/upsert", {"path": f"many/n{number:04d}.md",
                                     "content": f"a's {number}\n", "expected_revision": "absent"})
    a.sync()
    answers: list[Any] = []
    thread = threading.Thread(target=lambda: answers.append(b.sync()))
    thread.start()
    scope = b.home / "memory" / "global" / "many"
    deadline = time.monotonic() + 120
    while not scope.exists() or not any(scope.iterdir()):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    last = "many/n0399.md"
    b.call("/v1/memory/upsert", {"path": last, "content": "b's own\n",
                                 "expected_revision": "absent"})
    thread.join(timeout=240)
    (report,) = answers
    assert [entry["path"] for entry in report["changed_meanwhile"]] == [last]
    assert report["pushed"] is False and "next" in report
    assert b.texts()[last] == "b's own\n"
    again = b.sync()
    assert [entry["of"] for entry in again["conflicts"]] == [last]
    a.sync()
    for side in (a, b):
        texts = side.texts()
        assert texts[last] == "b's own\n"
        assert texts[again["conflicts"][0]["path"]] == "a's 399\n"
