"""The one closing line of `./dev test` over every stack's pytest run.

    python3 tests/summarize.py STACK EXIT_CODE [STACK EXIT_CODE ...]

reads build/test-<STACK>.log (pytest's output for that stack), prints one line per stack and
then `total: N passed, N failed, N skipped`, the line CI judges the run by, and exits 1 when any
stack failed. Errors count as failures, expected failures as skipped, unexpected passes as
passed. A stack whose pytest exited non-zero without counting a failure (it crashed, was
interrupted, or ran nothing: exit 5) counts as one failure, so the total never looks clean.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

CLOSING = re.compile(r"\bin [0-9.]+s\b")
COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b")


def stack_counts(log: str, exit_code: int) -> tuple[dict[str, int], str]:
    """(passed, failed, skipped) counts of one stack, and pytest's closing line."""
    lines = log.splitlines()
    closing = next((line for line in reversed(lines) if CLOSING.search(line)), "")
    found = {kind: int(n) for n, kind in COUNT.findall(closing)}
    counts = {
        "passed": found.get("passed", 0) + found.get("xpassed", 0),
        "failed": found.get("failed", 0) + found.get("error", 0) + found.get("errors", 0),
        "skipped": found.get("skipped", 0) + found.get("xfailed", 0),
    }
    if exit_code != 0 and counts["failed"] == 0:
        counts["failed"] = 1
    return counts, closing.strip("= ")


def main(argv: list[str], build: Path) -> int:
    total = {"passed": 0, "failed": 0, "skipped": 0}
    ok = True
    for stack, code in zip(argv[::2], map(int, argv[1::2]), strict=True):
        log_file = build / f"test-{stack}.log"
        log = log_file.read_text(errors="replace") if log_file.is_file() else ""
        counts, closing = stack_counts(log, code)
        for key in total:
            total[key] += counts[key]
        ok = ok and code == 0 and counts["failed"] == 0
        print(f"[dev] {stack}: {closing or 'no pytest summary'} (pytest exit {code})")
    print("total: {passed} passed, {failed} failed, {skipped} skipped".format(**total))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], Path(__file__).resolve().parent.parent / "build"))
