"""How the benchmarks print a duration (µs below a millisecond, ms below a second, else s), and
the CPU time they count for builds."""

import resource

# NumPy's BLAS starts a thread per core at import, which spins for a while after each BLAS call:
# CPU time that is neither tool's and varies from run to run. Processes timed in CPU time run
# with one BLAS thread.
ONE_BLAS_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def children_cpu() -> float:
    """CPU seconds (user + system) of every finished child process and the children they
    waited for: a whole `python -c` process with its compilers, measured by the difference
    around it. CPU time, not wall time: a noisy machine stretches wall time, not this."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


# For code run in a fresh process that times part of itself: `cpu_now()`, the CPU seconds of
# the process and of the compilers (children) it waited for.
CPU_NOW = """
import resource
def cpu_now():
    return sum(
        u.ru_utime + u.ru_stime
        for u in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )
"""
