// libsection._core: the C++ core of the libsection Python package.
#include "bindings.hpp"

#include "section/version.hpp"

PYBIND11_MODULE(_core, m) {
  m.doc() = "libsection's C++ core: parser, expander, linker core";
  m.attr("__version__") = section::version;
  section::python::bind_source(m);
  section::python::bind_parse(m);
  section::python::bind_expand(m);
  section::python::bind_linker(m);
  section::python::bind_dispatch(m);
}
