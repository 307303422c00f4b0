"""The closing summary of `./dev test` over every stack's pytest run.

    python3 tests/summarize.py STACK EXIT_CODE [STACK EXIT_CODE ...]

reads build/test-<STACK>.log (pytest's output for that stack) and build/test-<STACK>-skips.json
(every skip of that run and its reason, written by tests/conftest.py), prints one line per
stack, then every skip with its reason and why it is expected, then `total: N passed, N failed,
N skipped`, the line CI judges the run by. A skip that is not expected counts as a failure.
It exits 1 when any stack failed.

Errors count as failures, expected failures as skipped, unexpected passes as passed. A stack
whose pytest exited non-zero without counting a failure (it crashed, was interrupted, or ran
nothing: exit 5) counts as one failure, so the total never looks clean.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

CLOSING = re.compile(r"\bin [0-9.]+s\b")
COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b")
DEPS = Path(__file__).resolve().parent.parent / "deps"

# The skips a stack may show besides those for a package only another stack pins: (stacks,
# pattern of the reason, why the skip is expected). Any other skip fails the run.
EXPECTED_SKIPS = [
    (
        ("py311", "py312"),
        r"could not import '(torch|mlx\.core)'",
        "PyTensor's PYTORCH and MLX modes: no stack pins PyTorch or MLX",
    ),
    (
        ("py312",),
        r"once per run: ran on the py311 stack",
        "a C++ build no Python stack changes runs on the run's first stack (tests/conftest.py)",
    ),
    (
        ("py312",),
        r"clang-tidy runs on the py311 build only",
        "clang-tidy checks one build's compile commands, py311's",
    ),
    (
        ("py312",),
        r"PyTensor 3\.3\.\d+'s DimShuffle is not an ExternalCOp",
        "PyTensor 3.3's DimShuffle has no C file of its own for the drop-in to run",
    ),
]


def pinned(stack: str) -> set[str]:
    """The distributions a stack's deps file pins beyond what every stack shares."""
    path = DEPS / f"stack-{stack}.txt"
    text = path.read_text() if path.is_file() else ""
    return {m.lower() for m in re.findall(r"^\s*([A-Za-z0-9][\w.-]*)\s*==", text, re.M)}


def why_expected(stack: str, reason: str, stacks: list[str]) -> str | None:
    """Why `stack` may skip a test for `reason`, or None when it may not."""
    for where, pattern, why in EXPECTED_SKIPS:
        if stack in where and re.search(pattern, reason):
            return why
    own = pinned(stack)
    for other in stacks:
        for name in sorted(pinned(other) - own):
            if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", reason, re.I):
                return f"{name} is pinned on {other} only (deps/stack-{other}.txt)"
    return None


def stack_counts(log: str, exit_code: int) -> tuple[dict[str, int], str]:
    """(passed, failed, skipped) counts of one stack, and pytest's closing line; `skips`: the
    skips among the skipped (the rest are expected failures)."""
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
    return {**counts, "skips": found.get("skipped", 0)}, closing.strip("= ")


def skips_of(build: Path, stack: str) -> list[dict[str, str]] | None:
    """The skips conftest.py recorded for the stack's run, or None without a record."""
    path = build / f"test-{stack}-skips.json"
    return json.loads(path.read_text()) if path.is_file() else None


def main(argv: list[str], build: Path) -> int:
    total = {"passed": 0, "failed": 0, "skipped": 0}
    ok = True
    runs = list(zip(argv[::2], map(int, argv[1::2]), strict=True))
    stacks = sorted(p.stem.removeprefix("stack-") for p in DEPS.glob("stack-*.txt"))
    listed = []
    for stack, code in runs:
        log_file = build / f"test-{stack}.log"
        log = log_file.read_text(errors="replace") if log_file.is_file() else ""
        counts, closing = stack_counts(log, code)
        print(f"[dev] {stack}: {closing or 'no pytest summary'} (pytest exit {code})")
        skips = skips_of(build, stack)
        if skips is None and counts["skips"] and code == 0:  # a failed run may leave none
            skips = [
                {"test": "?", "reason": f"no record of the skips (build/test-{stack}-skips.json)"}
            ]
        for skip in skips or []:
            why = why_expected(stack, skip["reason"], stacks)
            if why is None:  # counted as the failure it is
                counts["skipped"] -= 1
                counts["failed"] += 1
            listed.append(
                f"[dev] {stack} skipped {skip['test']}: {skip['reason']} "
                + (f"(expected: {why})" if why else "(UNEXPECTED: counted as failed)")
            )
        for key in total:
            total[key] += counts[key]
        ok = ok and code == 0 and counts["failed"] == 0
    for line in listed:
        print(line)
    print("total: {passed} passed, {failed} failed, {skipped} skipped".format(**total))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], Path(__file__).resolve().parent.parent / "build"))
