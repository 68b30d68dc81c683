"""``eca_notebook.cli._until_stopped``: after the first stop signal, a second one that arrives late — once serving
has ended, during asyncio.run's cleanup — does not kill the process; it exits with 128 + the first signal.

Found in a full run: a client's SIGINT and SIGTERM sent "together", the second delivered after the agent had already
removed its handlers, and the agent died of SIGTERM (exit -15) in the middle of its way out."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

SCRIPT = r"""
import asyncio, os, signal, sys
from eca_notebook.cli import _until_stopped

async def serving():
    os.kill(os.getpid(), signal.SIGINT)
    await asyncio.sleep(60)
    return 0

code = asyncio.run(_until_stopped(serving()))
os.kill(os.getpid(), signal.SIGTERM)  # the client's second signal, delivered late
os.kill(os.getpid(), signal.SIGHUP)
sys.exit(code)
"""


def test_a_stop_signal_after_serving_ended_does_not_kill_the_way_out():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 128 + signal.SIGINT, (done.returncode, done.stderr)
