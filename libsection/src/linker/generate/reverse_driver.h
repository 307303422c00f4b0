// The driver of reverse mode (generate/derivative.cpp): taped copies of the differentiated
// inputs (each element an independent variable on the tape), the op's code run once on the
// instance's tape (`tape_scope`), then the outputs' adjoints seeded with the cotangents, the
// sweep, and the inputs' adjoints as the gradient. The tape's storage belongs to the derivative
// op's instance and is kept between calls (up to `kept_bytes`). A tape that outgrows its limit
// makes the call fall back on forward passes, which `fell_back` tells the user once.
//
// C++ only. Embedded at build time (libsection/embed.cmake), these notes left out.
#ifndef LIBSECTION_REVERSE_DRIVER_H
#define LIBSECTION_REVERSE_DRIVER_H

namespace libsection {

class reverse_pass : public driver {
 public:
  // Storage a tape keeps between calls; more is given back after the call.
  static constexpr std::size_t kept_bytes = std::size_t(64) << 20;

  reverse_pass(tape& t, std::size_t max_bytes)
      : driver("taped numbers"), tape_(t), max_bytes_(max_bytes) {
    t.begin(max_bytes);
  }
  ~reverse_pass() {
    libsection_rt->note_tape(tape_.size() * tape::bytes_per_entry);
    tape_.trim(kept_bytes);
  }

  // A taped copy of `plain`, its elements the next independent variables: NULL with an exception.
  template <class A>
  PyArrayObject* active_array(PyArrayObject* plain) {
    PyArrayObject* out = number_array<A>(plain);
    if (!out) return NULL;
    A* x = (A*)PyArray_DATA(out);
    npy_intp const n = PyArray_SIZE(out);
    firsts_.push_back(tape_.size());
    for (npy_intp k = 0; k < n; ++k) x[k].id = tape_.independent();
    return out;
  }
  template <class A>
  void active_scalar(A& x, double value) {
    x = A(value);
    add_block(1);
    firsts_.push_back(tape_.size());
    x.id = tape_.independent();
  }

  // After the pass: whether the tape holds it all, and no number of an earlier call.
  bool full() const { return tape_.full(); }
  // -1 with an exception when the tape cannot give the gradient: a number of an earlier call,
  // or (`forced`: no forward passes to fall back on) a full tape.
  int usable(char const* op, char const* files, bool forced) const {
    if (tape_.stale()) {
      PyErr_Format(
          PyExc_ValueError,
          "%s: the op's C code (%s) used, in this call, a number of its float inputs or outputs "
          "kept "
          "from an earlier call (in a static variable, or state outside the op's struct), which "
          "carries no derivative of this call's inputs: its derived gradient would be wrong. Keep "
          "such state in the op's struct sections (a derived gradient starts them afresh for each "
          "pass), or give the op a pullback of its own",
          op, files);
      return -1;
    }
    if (!tape_.full() || !forced) return 0;
    PyErr_Format(
        PyExc_MemoryError,
        "%s: its gradient is derived in reverse mode (LIBSECTION_DERIVATIVE_MODE=reverse), which "
        "records each operation of the op's C code (%s) on a tape of %zu bytes per operation; "
        "the tape %s at %zu operations, LIBSECTION_TAPE_MAX_BYTES=%zu. Raise "
        "LIBSECTION_TAPE_MAX_BYTES, or leave LIBSECTION_DERIVATIVE_MODE unset (auto) to fall back "
        "on "
        "forward passes, which need no tape",
        op, files, tape::bytes_per_entry,
        tape_.no_memory() ? "found no more memory" : "reached its limit", tape_.size(), max_bytes_);
    return -1;
  }

  // Tells once (`told`, the instance's) that a call of `scalars` differentiated scalars runs
  // forward passes of `width` tangents, its tape being full (auto mode falls back on them): a
  // RuntimeWarning naming the op, its files, the tape and the fix, for a gradient that got
  // slower. 0, or -1 with the exception a warnings filter made of it (`-W error`), `told` unset
  // so that the next such call raises it too.
  int fell_back(char const* op, char const* files, npy_intp scalars, int width, bool& told) const {
    if (told) return 0;
    char limit[96];
    std::snprintf(limit, sizeof limit,
                  tape_.no_memory() ? "found no more memory under LIBSECTION_TAPE_MAX_BYTES=%zu"
                                    : "reached LIBSECTION_TAPE_MAX_BYTES=%zu",
                  max_bytes_);
    if (PyErr_WarnFormat(
            PyExc_RuntimeWarning, 1,
            "%s (%s): its gradient's tape %s at %zu operations (%zu bytes), so this call runs "
            "forward passes of dual numbers in place of reverse mode's one pass and sweep: one "
            "pass per %d of its %zd differentiated scalars (%zd passes), each over the whole of "
            "the op's C code, which can be 100 times slower or more. To keep reverse mode, raise "
            "LIBSECTION_TAPE_MAX_BYTES (%zu bytes per operation); to choose forward passes "
            "without this warning, set LIBSECTION_DERIVATIVE_MODE=forward. Said once per "
            "compiled function; each later call over the limit falls back too",
            op, files, limit, tape_.size(), tape_.size() * tape::bytes_per_entry, width,
            (Py_ssize_t)scalars, (Py_ssize_t)((scalars + width - 1) / width),
            tape::bytes_per_entry))
      return -1;
    told = true;
    return 0;
  }

  // Adds the cotangent of output `out` to its elements' adjoints; -1 with an exception when
  // `out` is not the array of taped numbers the cotangent's shape asks for.
  template <class A>
  int seed(PyArrayObject* out, PyObject* cotangent, char const* what) {
    PyArrayObject* values = float64_values(cotangent);
    if (!values || check_output<A>(out, values, what) || start_sweep()) return -1;
    A const* y = contiguous<A>(out);
    if (!y) return -1;
    double const* g = (double const*)PyArray_DATA(values);
    npy_intp const n = PyArray_SIZE(out);
    for (npy_intp e = 0; e < n; ++e)
      if (g[e] != 0) adjoints_[tape_.place(y[e].id)] += g[e];
    return 0;
  }
  template <class A>
  int seed(A const& out, double cotangent) {
    if (start_sweep()) return -1;
    if (cotangent != 0) adjoints_[tape_.place(out.id)] += cotangent;
    return 0;
  }
  // The sweep, and the inputs' adjoints as their gradient; -1 with an exception.
  int sweep(char const* op, char const* files) {
    if (start_sweep() || usable(op, files, false)) return -1;
    tape_.sweep(adjoints_);
    acc_.assign(total_, 0.0);
    for (std::size_t b = 0; b < firsts_.size(); ++b)
      for (npy_intp k = 0; k < counts_[b]; ++k) acc_[offsets_[b] + k] = adjoints_[firsts_[b] + k];
    return 0;
  }

 private:
  int start_sweep() {
    if (adjoints_) return 0;
    adjoints_ = tape_.zeroed_adjoints();
    if (!adjoints_) PyErr_NoMemory();
    return adjoints_ ? 0 : -1;
  }

  tape& tape_;
  std::size_t max_bytes_;
  std::vector<std::size_t> firsts_;  // per differentiated input: the place of its first element
  double* adjoints_ = nullptr;       // the tape's, zeroed at the first seed
};

}  // namespace libsection
#endif
