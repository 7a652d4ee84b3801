"""``python -m assets.dev [dagster dev options]``: the UI and the daemon on the project's instance, stopped by
SIGTERM as by Ctrl-C.

Why not plain ``dagster dev``: a process started in the background by a non-interactive shell (``… &``, nohup, a
service script) inherits SIGINT *ignored*, and ``dagster dev`` maps SIGTERM to whatever SIGINT does, so it then
ignores SIGTERM as well and only ``kill -9`` stops it, leaving its webserver and daemon running. Restoring the
default dispositions before handing over lets Python install its own SIGINT handler again, and SIGTERM shuts the
webserver and the daemon down cleanly.
"""

import os
import shutil
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not {"-w", "--workspace", "-f", "-m"} & set(args):
        args = ["-w", str(ROOT / "workspace.yaml"), *args]
    os.environ.setdefault("DAGSTER_HOME", str(ROOT / ".dagster"))
    beside = Path(sys.executable).with_name("dagster")
    dagster = str(beside) if beside.exists() else shutil.which("dagster")
    if dagster is None:
        sys.exit("dagster is not installed in this environment: run `make setup`")
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)  # dispositions survive exec; SIG_IGN would too
    os.execv(dagster, [dagster, "dev", *args])


if __name__ == "__main__":
    main()
