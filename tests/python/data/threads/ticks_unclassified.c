#section support_code
// The answer goes through a function pointer, which the linker cannot follow: the op keeps
// the GIL while its code runs, and says why at DEBUG.
static npy_int64 ticks_identity(npy_int64 v) { return v; }
static npy_int64 (*volatile ticks_through)(npy_int64) = ticks_identity;
#define MOVED(m) ticks_through(m)
