"""Builds the tutorial op in a fresh process and prints what happened as JSON.

Usage: python linker_worker.py DTYPE   (the op's dtype: float64 or float32, two different modules)
The cache directory comes from LIBSECTION_CACHE_DIR, the compiler from CXX, as for users.
"""

import json
import sys
import time

import numpy as np
from linker_ops import VTV, VTV_FUNC

from libsection._build import build

dtype = sys.argv[1]
start = time.perf_counter()
f = build(
    VTV, VTV_FUNC, inputs=[f"{dtype}[:]"] * 2, outputs=[f"{dtype}[:]"], name="VectorTimesVector"
)
seconds = time.perf_counter() - start
x = np.arange(1000, dtype=dtype)
y = np.linspace(0, 1, 1000).astype(dtype)
print(
    json.dumps(
        {
            "compiled": f.info["compiled"],
            "key": f.info["key"],
            "correct": bool(np.array_equal(f(x, y), x * y)),
            "seconds": seconds,
        }
    )
)
