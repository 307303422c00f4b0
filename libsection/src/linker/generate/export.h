// How a module (and the runtime) exports its entry points, defined once for both: the rest of
// their symbols stay hidden (`-fvisibility=hidden`). `externally_visible`: the entry points stay
// exported when GCC compiles a module as a whole program (`ModuleSource::whole_program`); clang
// knows neither. `LIBSECTION_ONE_COPY`: a function compiled once, neither inlined nor cloned
// for a constant argument (`noclone`: GCC's). The same text in C and C++: a C++ module of
// built-in types is valid C but for the op's code. Embedded at build time
// (libsection/embed.cmake) as `module_export`, these notes left out.
#if defined(__GNUC__) && !defined(__clang__)
#define LIBSECTION_VISIBLE __attribute__((visibility("default"), externally_visible))
#define LIBSECTION_ONE_COPY __attribute__((noinline, noclone))
#else
#define LIBSECTION_VISIBLE __attribute__((visibility("default")))
#define LIBSECTION_ONE_COPY __attribute__((noinline))
#endif
#ifdef __cplusplus
#define LIBSECTION_EXPORT extern "C" LIBSECTION_VISIBLE
#else
#define LIBSECTION_EXPORT LIBSECTION_VISIBLE
#endif
