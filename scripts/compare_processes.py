"""The child processes of the side-by-side comparisons (compare_aa.py,
compare_reference.py, compare_guidellm.py): a simulator started and its URL
read, a process stopped, a tool run to its end with its output in a log."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Callable


def start_sim(cmd: list[str], log_path: Path, log: Callable[[str], None]) -> tuple[subprocess.Popen, str]:
    """Starts `agentload sim` (`cmd`, with `--port 0`), its stderr into `log_path`;
    returns it and the URL it prints first."""
    log("simulator: " + " ".join(cmd))
    errf = log_path.open("w")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errf, text=True)
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.kill()
        raise SystemExit(f"simulator did not print its URL (got {url!r}); see {log_path}")
    return proc, url


def stop(proc: subprocess.Popen, timeout: float = 20) -> None:
    """SIGTERM, then SIGKILL after `timeout` seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_logged(cmd: list[str], env: dict, log_path: Path, timeout: float, log: Callable[[str], None]) -> float:
    """Runs `cmd` to its end, its output into `log_path`; its wall time, s. A
    failure exits, quoting the log's tail."""
    log(" ".join(cmd))
    t0 = time.monotonic()
    with log_path.open("w") as f:
        rc = subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=timeout).returncode
    dt = time.monotonic() - t0
    if rc != 0:
        tail = log_path.read_text(errors="replace")[-3000:]
        raise SystemExit(f"{cmd[0]} exited {rc} after {dt:.0f} s; log {log_path}:\n{tail}")
    log(f"  done in {dt:.1f} s")
    return dt
