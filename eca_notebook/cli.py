"""``eca-notebook`` command line: ``server`` (ECA over stdio) today; ``acp`` and ``lab`` join as their issues land.

stdout belongs to the protocol, so logging goes to stderr (or ``--log-file``) and is set up before anything else.
Unknown options are tolerated with a warning: editor clients start servers with options of their own (the
reference server's ``--log-level``, ``--config-file`` … are understood here).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from ._version import __version__

__all__ = ["main"]


def _configure_logging(level: str, log_file: str | None) -> None:
    """A bounded queue in front of stderr (or the log file), every record redacted: see :mod:`._logging`."""
    from ._logging import configure_logging

    configure_logging(level, log_file)


def _add_server_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config-file", type=Path, help="use this file instead of ~/.config/eca/config.json")
    parser.add_argument("--log-level", default=os.environ.get("ECA_LOG_LEVEL", "warning"),
                        help="debug, info, warning (default) or error")
    parser.add_argument("--log-file", help="write logs to this file instead of stderr")
    parser.add_argument("--max-frame-size", type=int, help="largest accepted message in bytes (default 64 MiB)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="eca-notebook",
        description="An ECA code assistant for Jupyter. Without a command and with stdin not a terminal, it serves "
        "ECA over stdio (for clients that run the configured command as-is).",
    )
    parser.add_argument("--version", action="version", version=f"eca-notebook {__version__}")
    _add_server_options(parser)
    sub = parser.add_subparsers(dest="command")
    server = sub.add_parser("server", help="speak ECA (JSON-RPC, Content-Length framing) over stdin/stdout")
    _add_server_options(server)
    acp = sub.add_parser("acp", help="speak ACP, the Agent Client Protocol (JSON-RPC, NDJSON) over stdin/stdout")
    _add_server_options(acp)
    acp.add_argument("--prompt-timeout", type=float, default=None, metavar="SECONDS",
                     help="stop a session/prompt after this many seconds of work, answering ACP's Timeout (-32001); "
                     "time waiting for your permission does not count (default 300, as the ACP spec says; 0: never)")
    return parser


#: The signals that stop a stdio server the orderly way; it then exits with 128 + the signal, as a shell reports it.
_STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


async def _until_stopped(serving: Coroutine[Any, Any, int]) -> int:
    """Serve until the client leaves or a stop signal arrives; a signal ends serving the way a closed stdin does,
    so the engines close and the chats still being written reach the disk before the process exits.

    Why: clients stop their agent with signals, often several at once — Jupyter AI sends SIGINT and SIGTERM to the
    agent's group together, then SIGKILL after 5 s. With Python's defaults the SIGTERM killed the process in the
    middle of the SIGINT's unwinding, and a chat saved at the end of the last turn was lost (a resumed chat's model
    no longer saw it). Only the first signal acts; later ones do not cut the cleanup short, even after serving
    has ended."""
    import asyncio
    import signal

    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(serving)
    received: list[int] = []

    def stop(code: int) -> None:
        if not received:
            received.append(code)
            task.cancel()

    installed = []
    for name in _STOP_SIGNALS:
        number = getattr(signal, name, None)
        if number is None:
            continue
        try:
            loop.add_signal_handler(number, stop, 128 + number)
        except (NotImplementedError, RuntimeError, ValueError):  # no signals here (a thread, another platform)
            continue
        installed.append(number)
    try:
        return await task
    except asyncio.CancelledError:
        if not received:
            raise
        return received[0]
    finally:
        for number in installed:
            loop.remove_signal_handler(number)
            if received:
                # the rest of the way out (asyncio.run's own cleanup) must not die of a signal sent "together" with
                # the first but delivered late, as a client's second kill on a busy machine can be: ignored, not
                # the default action again
                signal.signal(number, signal.SIG_IGN)


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args, unknown = parser.parse_known_args(argv)
    if args.command is None:
        if sys.stdin is None or sys.stdin.isatty():
            parser.print_help(sys.stderr)
            return 2
        args.command = "server"
    _configure_logging(args.log_level, args.log_file)
    if unknown:
        logging.getLogger(__name__).warning("ignoring unknown options: %s", " ".join(unknown))
    if args.command == "server":
        import asyncio

        from .serving import serve_stdio

        return asyncio.run(_until_stopped(serve_stdio(config_file=args.config_file,
                                                      max_frame_size=args.max_frame_size)))
    if args.command == "acp":
        import asyncio

        from .acp import serve_acp_stdio

        return asyncio.run(_until_stopped(serve_acp_stdio(config_file=args.config_file,
                                                          max_frame_size=args.max_frame_size,
                                                          prompt_timeout=args.prompt_timeout)))
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
