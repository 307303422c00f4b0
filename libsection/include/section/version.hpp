// libsection's version, and the version of the code it generates (part of every cache key).
#pragma once

namespace section {

#ifndef LIBSECTION_VERSION
#define LIBSECTION_VERSION "0.0.0"
#endif

inline constexpr char const* version = LIBSECTION_VERSION;

}  // namespace section
