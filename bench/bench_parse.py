"""Parse throughput: libsection vs the installed PyTensor, side by side in one run.

Both load the same generated section file from disk into the `{tag: text}` dict: PyTensor by
constructing an ExternalCOp (which reads and splits its files), libsection by `load_sections`.
Files of 1 MiB and 10 MiB, with 1 KiB and 64 KiB blocks spread round-robin over 2 and 7
sections. Reports the best of several interleaved repetitions, in MB/s, and the ratio.

With the C++ helper `parse_bench` (built by `./dev bench`), also the C++ stage alone: `split`
(read, check, split into blocks with locations and diagnostics) and `load` (the same plus the
merged section texts). The Python figure adds building the dict's `str` objects, one copy of
the text that no implementation can avoid.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import libsection

TAGS = [
    "support_code",
    "support_code_apply",
    "support_code_struct",
    "init_code_struct",
    "cleanup_code_struct",
    "init_code",
    "init_code_apply",
]
LINE = "    z_ptr[i * z_str] = x_ptr[i * x_str] * y_ptr[i * y_str]; /* some C */\n"


def make_file(path: Path, size: int, block: int, sections: int) -> None:
    body = (LINE * (block // len(LINE) + 1))[: block - 1] + "\n"
    parts, written, i = [], 0, 0
    while written < size:
        marker = f"#section {TAGS[i % sections]}\n"
        parts += [marker, body]
        written += len(marker) + len(body)
        i += 1
    path.write_text("".join(parts))


def best_time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    args, _ = parser.parse_known_args()  # `./dev bench` passes every benchmark the same options

    from pytensor.link.c.op import ExternalCOp

    class Reference(ExternalCOp):
        def make_node(self, *inputs):
            raise NotImplementedError

        def perform(self, node, inputs, outputs):
            raise NotImplementedError

    helper = os.environ.get("LIBSECTION_PARSE_BENCH", "build/bench/bench/parse_bench")
    has_helper = Path(helper).is_file()
    print(
        f"{'file':>6} {'block':>6} {'sections':>8} | {'PyTensor':>8} {'libsection':>10} "
        f"{'speed-up':>8} | {'C++ split':>9} {'C++ load':>9}   (MB/s; target >= 1000)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for size in (2**20, 10 * 2**20):
            for block in (1024, 64 * 1024):
                for sections in (2, 7):
                    path = Path(tmp) / f"bench_{size}_{block}_{sections}.c"
                    make_file(path, size, block, sections)
                    mb = path.stat().st_size / 1e6
                    assert libsection.load_sections([path]) == Reference([str(path)]).code_sections
                    ours = theirs = float("inf")
                    for _ in range(args.repeat):  # interleaved, so both see the same machine load
                        theirs = min(theirs, best_time(lambda: Reference([str(path)]), 1))
                        ours = min(ours, best_time(lambda: libsection.load_sections([path]), 1))
                    cpp = "(no parse_bench)"
                    if has_helper:
                        out = subprocess.run(
                            [helper, str(path), str(args.repeat)],
                            capture_output=True,
                            text=True,
                            check=True,
                        ).stdout
                        times = json.loads(out)
                        split, load = times["split_seconds"], times["load_seconds"]
                        cpp = f"{mb / split:>9.0f} {mb / load:>9.0f}"
                    print(
                        f"{size // 2**20:>4}Mi {block // 1024:>4}Ki {sections:>8} | "
                        f"{mb / theirs:>8.0f} {mb / ours:>10.0f} {theirs / ours:>7.0f}x | {cpp}"
                    )
    lint_many(Reference, args.repeat)


def lint_many(reference, repeat: int) -> None:
    """A thousand op files (copies of the example ops): PyTensor's ExternalCOp reading and
    splitting each, beside section-lint checking them all in one run (every rule, and the
    reading). Target: section-lint well under a second."""
    import shutil
    import sys

    lint = shutil.which("section-lint", path=str(Path(sys.executable).parent))
    if lint is None:
        print("a thousand files: no section-lint beside this Python")
        return
    sources = sorted((Path(__file__).resolve().parents[1] / "ops").glob("*/*.c"))
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for i in range(1000):
            files.append(Path(tmp) / f"{i:04d}_{sources[i % len(sources)].name}")
            shutil.copy(sources[i % len(sources)], files[-1])

        def pytensor_reads():
            for f in files:
                reference([str(f)])

        def section_lint():
            subprocess.run([lint, "--output-format", "concise", tmp], capture_output=True)

        ours = theirs = float("inf")
        for _ in range(repeat):  # interleaved, so both see the same machine load
            theirs = min(theirs, best_time(pytensor_reads, 1))
            ours = min(ours, best_time(section_lint, 1))
    print(
        f"a thousand op files: PyTensor's ExternalCOp reads them in {theirs:.2f} s, "
        f"section-lint checks them in {ours:.2f} s ({theirs / ours:.1f}x; target: under 1 s)"
    )


if __name__ == "__main__":
    main()
