"""Run the agent as a supervised child: `amux run` does not exec (SPEC §6), so cleanup can run.

Process groups. With a controlling terminal the agent gets its own process group and is made
the terminal's foreground group, as a shell does with a job. Then Ctrl-C, Ctrl-\\, Ctrl-Z and
SIGWINCH reach the agent (and everything it started in its group) exactly once and never reach
the launcher, so the launcher need not ignore anything, and every signal the launcher does
receive was sent to it and is forwarded. Keeping the agent in our group would deliver
terminal signals to both, and forwarding them would deliver them twice; two quick Ctrl-Cs
make Claude Code and Codex exit. Ctrl-Z is nested job control: when the agent stops, the
launcher takes the terminal back and stops its own group with the same signal, so the shell
sees the job stop; when continued (`fg`), it hands the terminal back and continues the agent.
The terminal is handed over only if our group owns it and taken back only from the agent's
group, so a launcher started in the background never steals the shell's terminal (it hands
it over when brought to the foreground: on SIGCONT, or when the agent stops on SIGTTIN).

Without a controlling terminal there are no terminal signals, and the agent stays in our
group: a supervisor that kills our group (`killpg`) then also reaches the agent instead of
orphaning it; such a group-wide signal reaches the agent twice, directly and forwarded.

Signals sent to the launcher (HUP, INT, QUIT, TERM, USR1, USR2, WINCH) are forwarded to the
agent's pid; the launcher waits until the agent exits, whatever it receives. Signals ignored
when supervise() starts (`nohup`) stay ignored, by both, as in a direct run. A request to
stop (TERM, HUP) is bounded: an agent still running `STOP_GRACE` seconds after it was
forwarded is killed with every process it started (an interactive Gemini CLI ignores
SIGTERM), so the launcher can clean up and revoke the session's token.

Limits: supervise() installs signal handlers, so it runs in the main thread; the launcher
must not write to the terminal while the agent owns it (with `stty tostop` that would stop
the launcher); a SIGKILLed launcher cannot clean up, and its agent is orphaned.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
from collections.abc import Callable
from types import FrameType

from amux.errors import InvalidArgument
from amux.typing_light import NamedTuple

_Handler = Callable[[int, FrameType | None], None] | signal.Handlers

FORWARDED = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM,
             signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH)
STOPPING = (signal.SIGHUP, signal.SIGTERM)
"""The forwarded signals that ask the agent to stop, and are followed by a kill after
`STOP_GRACE` seconds."""
STOP_GRACE = 5.0
"""Seconds an agent has to exit after a request to stop before it and its processes are
killed (time to save its session; `docker stop` gives 10, a user's `kill` expects less)."""


class AgentNotStarted(InvalidArgument):
    """The agent executable could not be started (not found, not executable, bad cwd):
    what the user named cannot run (`invalid_argument`)."""

    def __init__(self, argv: list[str], error: OSError) -> None:
        self.argv = argv
        self.error = error
        where = f": {error.filename}" if error.filename else ""
        super().__init__(f"cannot start the agent ({shlex.join(argv)}): "
                         f"{error.strerror or error}{where}")


class RunAs(NamedTuple):
    """Another Unix user to run the agent as (isolated runs; needs root)."""

    uid: int
    gid: int
    groups: tuple[int, ...]
    """Supplementary groups, the target's own (never the launcher's)."""


def supervise(argv: list[str], env: dict[str, str], cwd: str | None = None, *,
              on_start: Callable[[int], None] | None = None, run_as: RunAs | None = None,
              ) -> int:
    """Run the agent as a child that owns the terminal; forward signals; return its exit status.

    The status is the agent's exit code, or 128+N when signal N killed it (the shell's
    convention). `on_start(pid)` runs once the agent has started; if it raises, the agent is
    killed and reaped and the exception propagates. The terminal's foreground group and our
    signal handlers are restored however the agent ends. Raises AgentNotStarted.
    """
    try:
        tty: int | None = os.open("/dev/tty", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:  # no controlling terminal
        tty = None
    try:
        return _Supervision(tty).run(argv, env, cwd, on_start, run_as)
    finally:
        if tty is not None:
            os.close(tty)


class _Supervision:
    """One supervise() call's state, shared with its signal handlers."""

    def __init__(self, tty: int | None) -> None:
        self.tty = tty
        self.pid: int | None = None  # the agent's, once spawned
        self.early: list[int] = []  # signals that arrived while the agent was being started
        self.stopping = False  # a request to stop was forwarded; the kill is timed

    def run(self, argv: list[str], env: dict[str, str], cwd: str | None,
            on_start: Callable[[int], None] | None, run_as: RunAs | None) -> int:
        # waitid() needs SIGCHLD not ignored (an ignored SIGCHLD reaps children automatically).
        handlers: dict[int, _Handler] = {signal.SIGCHLD: signal.SIG_DFL,
                                         signal.SIGALRM: self._kill}
        handlers.update({sig: self._forward for sig in FORWARDED
                         if signal.getsignal(sig) is not signal.SIG_IGN})
        if self.tty is not None:
            handlers[signal.SIGCONT] = self._continued
        # Installed before the spawn so no signal kills us between spawn and supervision; the
        # agent starts with default dispositions for them anyway (exec resets caught signals).
        previous = {sig: signal.signal(sig, handler) for sig, handler in handlers.items()}
        try:
            try:
                process = subprocess.Popen(
                    argv, env=env, cwd=cwd, process_group=None if self.tty is None else 0,
                    user=None if run_as is None else run_as.uid,
                    group=None if run_as is None else run_as.gid,
                    extra_groups=None if run_as is None else list(run_as.groups))
            except OSError as error:
                raise AgentNotStarted(argv, error) from error
            try:
                self.pid = process.pid
                for sig in self.early:
                    self._deliver(process.pid, sig)
                self._hand_terminal(os.getpgrp(), process.pid)
                if on_start is not None:
                    on_start(process.pid)
                self._wait_exit(process.pid)
            except BaseException:
                process.kill()  # never leave an unsupervised agent behind
                process.wait()
                raise
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            for sig, handler in previous.items():
                # None: a handler not installed from Python, which cannot be reinstalled.
                signal.signal(sig, signal.SIG_DFL if handler is None else handler)
            if self.pid is not None:
                self._hand_terminal(self.pid, os.getpgrp())
        code = process.wait()
        return code if code >= 0 else 128 - code

    def _wait_exit(self, pid: int) -> None:
        """Until the agent exits, left unreaped so the pid we forward to cannot be reused."""
        stops = 0 if self.tty is None else os.WSTOPPED
        while True:
            info = os.waitid(os.P_PID, pid, os.WEXITED | stops | os.WNOWAIT)
            assert info is not None  # None only with WNOHANG
            if info.si_code != os.CLD_STOPPED:
                return
            os.waitid(os.P_PID, pid, os.WSTOPPED | os.WNOHANG)  # consume the stop report
            self._follow_stop(pid, info.si_status)

    def _follow_stop(self, pid: int, stop: int) -> None:
        """The agent stopped holding the terminal: stop our job too, or the shell would hang."""
        ours = os.getpgrp()
        # SIGTTIN/SIGTTOU while our group has the terminal only means the agent touched it
        # before we handed it over; any other stop is the user's, so our job stops too.
        if stop not in (signal.SIGTTIN, signal.SIGTTOU) or self._terminal_group() != ours:
            self._hand_terminal(pid, ours)
            os.killpg(ours, signal.SIGTSTP if stop == signal.SIGSTOP else stop)
            # Here once continued (`fg`, `bg`), or at once if our group is orphaned: the
            # kernel drops job-control stops sent to an orphaned group.
        self._hand_terminal(ours, pid)
        os.killpg(pid, signal.SIGCONT)

    def _forward(self, signum: int, frame: FrameType | None) -> None:
        if self.pid is None:
            self.early.append(signum)
        else:
            self._deliver(self.pid, signum)

    def _deliver(self, pid: int, signum: int) -> None:
        os.kill(pid, signum)
        if signum in STOPPING and not self.stopping:
            self.stopping = True
            signal.setitimer(signal.ITIMER_REAL, STOP_GRACE)

    def _kill(self, signum: int, frame: FrameType | None) -> None:
        """The grace after a request to stop is over: SIGKILL every process the agent
        started, then the agent (its exit ends the wait; the launcher then cleans up)."""
        if self.pid is None:
            return
        import psutil  # only here: importing it would cost every launch ~12 ms

        try:
            started = psutil.Process(self.pid).children(recursive=True)
        except psutil.Error:
            started = []
        for process in started:
            with contextlib.suppress(psutil.Error):
                process.kill()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)

    def _continued(self, signum: int, frame: FrameType | None) -> None:
        """Brought to the foreground (`fg` after `&` or Ctrl-Z): the agent gets the terminal."""
        if self.pid is not None:
            self._hand_terminal(os.getpgrp(), self.pid)

    def _terminal_group(self) -> int | None:
        if self.tty is None:
            return None
        try:
            return os.tcgetpgrp(self.tty)
        except OSError:  # hung up
            return None

    def _hand_terminal(self, holder: int, to: int) -> None:
        """Make group `to` the terminal's foreground, only if group `holder` has it now."""
        if self.tty is None or self._terminal_group() != holder:
            return
        # From the background, tcsetpgrp() raises SIGTTOU (which would stop us) unless blocked.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTTOU})
        try:
            os.tcsetpgrp(self.tty, to)
        except OSError:  # hung up, or the group has just gone
            pass
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
