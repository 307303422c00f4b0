// The parts of libsection._core, one translation unit each (bind_<area>.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace section::python {

void bind_source(pybind11::module_& m);    // SourceManager, Diagnostic, rendering
void bind_parse(pybind11::module_& m);     // load_sections, load_texts, parse_text
void bind_expand(pybind11::module_& m);    // expand, op_cache_version, signature strings
void bind_linker(pybind11::module_& m);    // graphs, link, prepare, build_sections, CompiledOp
void bind_dispatch(pybind11::module_& m);  // Dispatcher: the class API's call in C

}  // namespace section::python
