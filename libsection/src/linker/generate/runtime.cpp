// The runtime's source, assembled from the C files beside this one: the prelude, the node
// table's kinds from `RuntimeVar::Kind`, the export macros, the batch plan's layout (batch_plan.h),
// the batch loop (batch.c) and the runtime's functions (runtime.c, which says what they do).
#include <string>
#include <utility>

#include "linker/generate/batch.c.hpp"
#include "linker/generate/batch_plan.h.hpp"
#include "linker/generate/export.h.hpp"
#include "linker/generate/runtime.c.hpp"
#include "section/ctype.hpp"
#include "section/linker/generate/module.hpp"

namespace section {

namespace {

/// The node table's kinds as the runtime's C names them, from `RuntimeVar::Kind`, which the
/// types write the tables with: the two cannot drift apart.
std::string kind_names() {
  using Kind = RuntimeVar::Kind;
  // LIBSECTION_RT_IS_SCALAR relies on the scalar kinds coming last.
  static_assert(Kind::scalar_bool > Kind::pytensor_array_unchecked &&
                Kind::scalar_bool < Kind::scalar_int && Kind::scalar_int < Kind::scalar_uint &&
                Kind::scalar_uint < Kind::scalar_float);
  std::string out;
  for (auto [name, kind] : {std::pair{"ARRAY", Kind::array},
                            {"OBJECT", Kind::object},
                            {"PT_ARRAY", Kind::pytensor_array},
                            {"PT_ARRAY_UNCHECKED", Kind::pytensor_array_unchecked},
                            {"BOOL", Kind::scalar_bool},
                            {"INT", Kind::scalar_int},
                            {"UINT", Kind::scalar_uint},
                            {"FLOAT", Kind::scalar_float}})
    out += std::string("#define LIBSECTION_RT_") + name + " " +
           std::to_string(static_cast<int>(kind)) + "\n";
  return out + "#define LIBSECTION_RT_IS_SCALAR(var) ((var)->kind >= LIBSECTION_RT_BOOL)\n";
}

}  // namespace

std::string runtime_source() {
  // Named by a #line, as a module's code is: `__FILE__` in Python's macros (asserts) would
  // otherwise paste the build folder's path into the package.
  return "// The libsection " LIBSECTION_VERSION " runtime\n#line 2 \"<libsection-runtime>\"\n" +
         std::string(module_prelude) + "#define LIBSECTION_RUNTIME_ABI " +
         std::to_string(module_abi_version) + "\n" + kind_names() + embedded::export_h +
         embedded::batch_plan_h + embedded::batch_c + embedded::runtime_c;
}

}  // namespace section
