// The plan of a batch, as the runtime's batch loop (batch.c) reads it and the linker's
// `BatchPlan` (section/linker/generate/batch_plan.hpp) writes it: C text both include (the
// runtime gets it before batch.c, embedded by libsection/embed.cmake).
//
// The plan is int64 values:
//   flags (LIBSECTION_BATCH_*), the number of dimension names,
//   per input:  its core ndim, its core dimensions, the mask of its batch dimensions that may
//               broadcast at run time (PyTensor's rule; ignored without LIBSECTION_BATCH_STRICT)
//   per output: its core ndim, its core dimensions
// A core dimension is a dimension name's number (>= 0), or a fixed length l written -(l + 1).
// Its labels: the op's name, its signature, then the name of each dimension.
#define LIBSECTION_BATCH_WHOLE 1  /* the op takes the whole batch (vmap_method "broadcast_all") */
#define LIBSECTION_BATCH_STRICT 2 /* a batch dimension broadcasts only where its mask says */
#define LIBSECTION_BATCH_FLAGS 0  /* where the flags are */
#define LIBSECTION_BATCH_NAMES 1  /* where the number of dimension names is */
#define LIBSECTION_BATCH_CELLS 2  /* where the first input's cell starts */
#define LIBSECTION_BATCH_MAX 64   /* the most dimension names, and the most inputs and outputs */
