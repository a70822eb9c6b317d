"""Finding and running the `fusekit` command-line tool."""

import os
import shutil
import subprocess


def find_binary(explicit=None):
    """The fusekit CLI: `explicit`, else $FUSEKIT_BIN, else `fusekit` on PATH."""
    path = explicit or os.environ.get("FUSEKIT_BIN") or shutil.which("fusekit")
    if not path or not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise FileNotFoundError(
            f"no fusekit binary (looked at {explicit or os.environ.get('FUSEKIT_BIN') or 'PATH'}); "
            "build it (./scripts/build.sh) and pass fusekit_bin=, set FUSEKIT_BIN or put it on PATH")
    return path


def run(args, binary=None):
    """Runs `fusekit ARGS...`; a failure raises RuntimeError with the tool's own message."""
    exe = find_binary(binary)
    done = subprocess.run([exe, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"`fusekit {' '.join(args)}` failed (exit {done.returncode}):\n"
                           f"{done.stderr.strip() or done.stdout.strip()}")
    return done.stdout
