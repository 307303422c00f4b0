"""``python -m libsection``: the tour of a folder of ops, or what libsection makes of section files.

``python -m libsection run [OPS_DIR]``  lint every op, build it, run it standalone and inside
                                        PyTensor in every mode, against NumPy, with timings
                                        (OPS_DIR needs an ``examples.py`` like ``ops/``'s).
``python -m libsection show [PATH...]`` each section of the files with the file and line of
                                        its blocks, and every diagnostic.
``python -m libsection editor-setup [DIR]`` write what clangd needs to read DIR's section files
                                        (a ``.clangd`` file; see README.md, "In the editor");
                                        run it again after upgrading libsection.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from . import _core
from ._progress import Progress, progress_stream


def _op_groups(paths: list[Path]) -> list[list[Path]]:
    """Each folder's .c files form one op (they load together); a file alone is its own op."""
    groups: list[list[Path]] = []
    for path in paths:
        if path.is_dir():
            folders = sorted({f.parent for f in path.rglob("*.c")})
            groups += [sorted(folder.glob("*.c")) for folder in folders]
        else:
            groups.append([path])
    return groups


def show(paths: list[Path]) -> int:
    failed = False
    for files in _op_groups(paths):
        start = time.perf_counter()
        loaded = _core.load_sections([str(f) for f in files])
        elapsed_ms = (time.perf_counter() - start) * 1e3
        print(f"== {', '.join(map(str, files))}  (parsed in {elapsed_ms:.2f} ms)")
        for block in loaded.blocks:
            lines = block["text"].count("\n")
            print(
                f"  {block['filename']}:{block['line']}:{block['column']}: "
                f"#section {block['tag']}  ({lines} lines)"
            )
        for diagnostic in loaded.diagnostics:
            print("  " + diagnostic.render().rstrip("\n").replace("\n", "\n  "))
        failed |= loaded.error is not None
    return 1 if failed else 0


def _ms(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us" if seconds >= 1e-6 else f"{seconds * 1e9:.0f} ns"


def _same(actual, expected) -> bool:
    if isinstance(expected, tuple):
        return len(actual) == len(expected) and all(map(_same, actual, expected))
    return bool(np.allclose(actual, expected, rtol=1e-12))


def _run_standalone(example, task) -> tuple[str, bool]:
    from ._types import type_of

    op = example.op()
    values = example.inputs()
    files = [str(op.get_path(f)) for f in op.func_files]
    start = time.perf_counter()
    loaded = _core.load_sections(files)
    parse = time.perf_counter() - start
    input_types = [type_of(v) for v in values]
    types = [_core.parse_type(t) for t in input_types + list(op.output_types(*input_types))]
    description = _core.OpDescription()
    description.inputs, description.outputs = types[: len(values)], types[len(values) :]
    description.func_name = op.func_name
    start = time.perf_counter()
    _core.expand(loaded, description, _core.single_node_context(description))
    expand = time.perf_counter() - start
    start = time.perf_counter()
    with task(f"compiling {example.folder}"):
        compiled = op.compiled(*input_types)
    build = time.perf_counter() - start
    result = compiled(*values)
    calls = 2000
    start = time.perf_counter()
    for _ in range(calls):
        compiled(*values)
    call = (time.perf_counter() - start) / calls
    how = "compiled" if compiled.info.get("compiled") else "cache hit"
    ok = _same(result, example.expected(*values))
    return (
        f"parse {_ms(parse)} | expand {_ms(expand)} | {how} {_ms(build)} | call {_ms(call)}"
        f" | {'matches NumPy' if ok else 'DIFFERS FROM NUMPY'}"
    ), ok


def _run_pytensor(example, task) -> tuple[str, bool]:
    import pytensor
    import pytensor.tensor as pt

    from .pytensor import pytensor_op

    values = example.inputs()
    variables = [
        pt.tensor(dtype=v.dtype.name, shape=(None,) * v.ndim)
        if isinstance(v, np.ndarray)
        else pt.dscalar()
        for v in values
    ]
    parts, all_ok = [], True
    for mode in ("CVM", "FAST_COMPILE", "NUMBA"):
        start = time.perf_counter()
        f = pytensor.function(variables, pytensor_op(example.op())(*variables), mode=mode)
        compile_time = time.perf_counter() - start
        ok = _same(f(*values), example.expected(*values))
        all_ok &= ok
        parts.append(f"{mode} {'ok' if ok else 'DIFFERS'} ({_ms(compile_time)})")
    return "PyTensor: " + ", ".join(parts), all_ok


def run(ops_dir: Path, quiet: bool = False) -> int:
    spec = importlib.util.spec_from_file_location("examples", ops_dir / "examples.py")
    if spec is None or spec.loader is None or not (ops_dir / "examples.py").is_file():
        print(f"{ops_dir}: no examples.py describing the ops to run", file=sys.stderr)
        return 2
    examples = importlib.util.module_from_spec(spec)
    sys.modules["examples"] = examples
    spec.loader.exec_module(examples)

    lint = shutil.which("section-lint")
    ok = True
    if lint is None:
        print("section-lint is not on PATH (pip install . installs it)", file=sys.stderr)
        ok = False
    else:
        start = time.perf_counter()
        result = subprocess.run(
            [lint, "--output-format", "concise", str(ops_dir)], capture_output=True, text=True
        )
        print(
            f"== lint {ops_dir}: {'clean' if result.returncode == 0 else 'FINDINGS'} "
            f"({_ms(time.perf_counter() - start)})"
        )
        if result.returncode != 0:
            print(result.stdout + result.stderr)
            ok = False
    # A compile over a second shows `[3/8] compiling folder (1.2 s)` on a terminal, erased
    # before the op's line is printed.
    with Progress(len(examples.EXAMPLES), progress_stream(False if quiet else None)) as shown:
        for number, example in enumerate(examples.EXAMPLES, start=1):
            print(f"== {example.folder}", flush=True)
            for step in (_run_standalone, _run_pytensor):
                try:
                    line, step_ok = step(example, lambda label, n=number: shown.task(n, label))
                except Exception as error:  # report every op, then fail
                    line, step_ok = f"FAILED: {type(error).__name__}: {error}", False
                print("  " + line, flush=True)
                ok &= step_ok
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    description = __doc__.split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m libsection", description=description)
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="lint, build and run a folder of example ops")
    run_parser.add_argument("ops_dir", nargs="?", type=Path, default=Path("ops"))
    run_parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress line while an op compiles"
    )
    show_parser = commands.add_parser("show", help="show the sections of section files")
    show_parser.add_argument("paths", nargs="*", type=Path, default=[Path("ops")])
    setup_parser = commands.add_parser(
        "editor-setup",
        help="write what clangd needs to read a folder's section files (run it again after "
        "upgrading libsection or changing environment)",
    )
    setup_parser.add_argument("directory", nargs="?", type=Path, default=Path("."))
    args = parser.parse_args(argv)
    if args.command == "editor-setup":
        from . import _editor

        return _editor.main(args.directory)
    return run(args.ops_dir, args.quiet) if args.command == "run" else show(args.paths)


if __name__ == "__main__":
    sys.exit(main())
