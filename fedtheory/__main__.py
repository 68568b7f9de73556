"""``python -m fedtheory`` and the ``fedtheory`` command: :func:`fedtheory.cli.main`.

Ctrl-C is one line (``fedtheory: error: interrupted``, exit status 2) at any moment: the command
line is imported inside :func:`main`, so an interrupt during the seconds of start-up is caught
too, and after an interrupt the process exits at once, without the seconds that the shutdown
hooks of Dask and multiprocessing take (what was written is already cleaned up, and worker
processes end with their parent).
"""

import os
import sys


def _interrupted() -> int:
    print("fedtheory: error: interrupted", file=sys.stderr)
    return 2


def main() -> int:
    """The command line's entry point (``[project.scripts]``)."""
    try:
        import fedtheory.cli as cli  # noqa: PLC0415  (see the module docstring)
    except KeyboardInterrupt:
        return _interrupted()
    code = cli.main()
    if cli.interrupted:
        mp = sys.modules.get("multiprocessing")
        if mp is not None:  # worker processes still starting end now, without a traceback;
            for child in mp.active_children():  # then multiprocessing's named semaphores are
                child.terminate()  # released (its resource tracker would warn of them)
            mp.util._run_finalizers(0)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
