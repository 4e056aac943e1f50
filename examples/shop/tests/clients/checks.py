"""The checks the client scripts make: one line each as it is made, and a summary that decides the exit code."""

import sys

results = []


def check(name, condition, detail=""):
    """Records one check, and prints it: `ok` or `FAIL`, with `detail` when it failed."""
    results.append(bool(condition))
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f": {detail}"), flush=True)


def text_of(result):
    """The text blocks of a tool's result, joined."""
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


def finish():
    """Prints "N passed, M failed" and exits non-zero when a check failed, or none was made."""
    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed or not results else 0)
