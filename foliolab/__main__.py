"""``python -m foliolab`` and the ``foliolab`` command: main(), with a
Ctrl-C during start-up (the imports take a second or two on a loaded
machine) ending in the one line cli.py gives one later, not a traceback
through the import machinery."""

import sys


def entry() -> int:
    try:
        from foliolab.cli import main
    except KeyboardInterrupt:
        print("foliolab: interrupted", file=sys.stderr)
        return 130
    return main()


if __name__ == "__main__":
    sys.exit(entry())
