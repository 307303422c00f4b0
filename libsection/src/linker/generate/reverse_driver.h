// The driver of reverse mode (generate/derivative.cpp): taped copies of the differentiated
// inputs (each element an independent variable on the tape), the op's code run once on the
// instance's tape (`tape_scope`), then the outputs' adjoints seeded with the cotangents, the
// sweep, and the inputs' adjoints as the gradient. The tape's storage belongs to the derivative
// op's instance and is kept between calls (up to `tape_kept_bytes`). A tape that outgrows its
// limit makes the call fall back on forward passes, which `fell_back` tells the user once.
//
// C++ only. Embedded at build time (libsection/embed.cmake), these notes left out.
#ifndef LIBSECTION_REVERSE_DRIVER_H
#define LIBSECTION_REVERSE_DRIVER_H

namespace libsection {

// The bytes of a call's inputs: each array's type, shape and data, each scalar's value. A
// recording is swept only for the inputs it was recorded on. The arrays' data is read where
// it is (the inputs live for the call): a record op copies it once into its recording, a
// pullback compares it in place.
class fingerprint {
 public:
  fingerprint() = default;
  fingerprint(fingerprint const&) = delete;
  fingerprint& operator=(fingerprint const&) = delete;
  ~fingerprint() {
    for (PyObject* c : copies_) Py_DECREF(c);
  }
  // 0, or -1 with an exception (no memory for a copy of a strided array).
  int add(PyArrayObject* a) {
    int const head[2] = {PyArray_TYPE(a), PyArray_NDIM(a)};
    add_own(head, sizeof head);
    add_own(PyArray_DIMS(a), sizeof(npy_intp) * (std::size_t)PyArray_NDIM(a));
    if (!PyArray_IS_C_CONTIGUOUS(a)) {
      a = (PyArrayObject*)PyArray_NewCopy(a, NPY_CORDER);
      if (!a) return -1;
      copies_.push_back((PyObject*)a);
    }
    parts_.push_back(part{(char const*)PyArray_DATA(a), (std::size_t)PyArray_NBYTES(a), {}});
    return 0;
  }
  template <class T>
  void add(T const& value) {
    add_own(&value, sizeof value);
  }
  // The bytes, one after another, into `into` (its storage reused).
  void copy_to(std::vector<char>& into) const {
    into.clear();
    for (part const& p : parts_) into.insert(into.end(), p.bytes(), p.bytes() + p.n);
  }
  // Whether `bytes` are these bytes, one after another.
  bool same_as(std::vector<char> const& bytes) const {
    std::size_t at = 0;
    for (part const& p : parts_) {
      if (bytes.size() - at < p.n || (p.n && std::memcmp(bytes.data() + at, p.bytes(), p.n)))
        return false;
      at += p.n;
    }
    return at == bytes.size();
  }

 private:
  // An input's bytes: borrowed (an array's data), or its own (a shape, a scalar).
  struct part {
    char const* data;
    std::size_t n;
    std::vector<char> own;
    char const* bytes() const { return data ? data : own.data(); }
  };
  void add_own(void const* data, std::size_t n) {
    parts_.push_back(part{NULL, n, std::vector<char>((char const*)data, (char const*)data + n)});
  }
  std::vector<part> parts_;
  std::vector<PyObject*> copies_;  // strided inputs made contiguous
};

// Storage a tape keeps between calls; more is given back after the call.
constexpr std::size_t tape_kept_bytes = std::size_t(64) << 20;

// A record op's taped pass (DerivativeSpec::Mode::record), kept in the runtime's recordings
// until the pullback of the same inputs sweeps it: the tape, where each differentiated input's
// elements are on it, the inputs' fingerprint and the taped numbers of the float outputs.
// Plain C++ (no Python object), so the runtime may free it from any thread.
struct recording {
  struct output {
    int typenum = 0, ndim = -1;  // -1: a scalar
    npy_intp dims[NPY_MAXDIMS] = {};
    std::vector<char> elements;
  };
  tape taped;
  std::vector<char> inputs;
  std::vector<npy_intp> offsets, counts;
  std::vector<std::size_t> firsts;
  npy_intp total = 0;
  std::vector<output> outputs;
  // Holds nothing to sweep yet, or was swept: a record op may record on it again.
  bool swept = true;
  std::size_t bytes() const {
    std::size_t n = taped.capacity_bytes() + inputs.size();
    for (auto const& o : outputs) n += o.elements.size();
    return n;
  }
};

inline void free_recording(void* r) { delete (recording*)r; }
inline int recording_swept(void* r, void*) { return ((recording*)r)->swept; }
inline int recording_matches(void* r, void* inputs) {
  return ((fingerprint const*)inputs)->same_as(((recording*)r)->inputs);
}
// A recording to record on: a swept one of `identity` (its storage reused), else a new one;
// NULL with a MemoryError.
inline recording* recording_to_fill(char const* identity) {
  if (void* r = libsection_rt->recording_take(identity, recording_swept, NULL))
    return (recording*)r;
  recording* r = new (std::nothrow) recording();
  if (!r) PyErr_NoMemory();
  return r;
}
// The recording of `identity` made on `inputs`, taken from the runtime; NULL when none is kept.
inline recording* recording_of(char const* identity, fingerprint const& inputs) {
  return (recording*)libsection_rt->recording_take(identity, recording_matches, (void*)&inputs);
}
// A recording taken from the runtime for a call, handed back at its end (the runtime keeps a
// few, and frees the oldest).
struct held_recording {
  char const* identity;
  recording* r;
  held_recording(char const* id, recording* taken) : identity(id), r(taken) {}
  held_recording(held_recording const&) = delete;
  held_recording& operator=(held_recording const&) = delete;
  // Handed back whole, swept or not: the runtime bounds what it keeps (16, 512 MiB), and the
  // next record op of the op reuses a swept one's storage (fresh pages for a tape of 64 MiB
  // cost more than the pass).
  ~held_recording() {
    if (r) libsection_rt->recording_put(identity, r, r->bytes(), free_recording);
  }
};

class reverse_pass : public driver {
 public:
  // A pass on `t`; or, given a recording (`found`, whose tape `t` is), its sweep.
  reverse_pass(tape& t, std::size_t max_bytes, recording* found)
      : driver("taped numbers"), tape_(t), max_bytes_(max_bytes), found_(found) {
    if (!found) t.begin(max_bytes);
  }
  // A record op's pass, on the tape of the recording `into`.
  reverse_pass(recording& into, std::size_t max_bytes)
      : reverse_pass(into.taped, max_bytes, nullptr) {
    records_ = true;
  }
  // A pass gives back its tape's storage over `tape_kept_bytes`; a recording's is the
  // recording's, kept whole for its pullback and the next record (`held_recording`).
  ~reverse_pass() {
    if (found_) return;
    libsection_rt->note_tape(tape_.size() * tape::bytes_per_entry);
    if (!records_) tape_.trim(tape_kept_bytes);
  }
  tape& taped_on() { return tape_; }

  // ---- a recording: kept by a record op, swept by its pullback

  // Whether the pass's tape is whole and of this pass alone (a recording worth keeping).
  bool complete() const { return !tape_.full() && !tape_.stale(); }
  // An output's taped numbers, kept (in the outputs' order) for `keep`; -1 with an exception.
  template <class A>
  int keep_output(A const& value) {
    kept_outputs_.emplace_back();
    recording::output& o = kept_outputs_.back();
    o.elements.assign((char const*)&value, (char const*)&value + sizeof value);
    return 0;
  }
  int keep_output(PyArrayObject* out) {
    if (!out || !PyArray_IS_C_CONTIGUOUS(out)) {  // swept only as an array of its own
      PyErr_SetString(PyExc_ValueError, "a recorded output is not a C-contiguous array");
      return -1;
    }
    kept_outputs_.emplace_back();
    recording::output& o = kept_outputs_.back();
    o.typenum = PyArray_TYPE(out);
    o.ndim = PyArray_NDIM(out);
    std::copy(PyArray_DIMS(out), PyArray_DIMS(out) + o.ndim, o.dims);
    char const* data = (char const*)PyArray_DATA(out);
    o.elements.assign(data, data + PyArray_NBYTES(out));
    return 0;
  }
  void keep(recording& into, fingerprint const& inputs) {
    inputs.copy_to(into.inputs);
    into.offsets.assign(offsets_.begin(), offsets_.end());
    into.counts.assign(counts_.begin(), counts_.end());
    into.firsts = firsts_;
    into.total = total_;
    into.outputs.swap(kept_outputs_);
    into.swept = false;
  }
  // The pullback's side: the found recording's numbering of the inputs; its outputs' taped
  // numbers (an array over the recording's, which outlives the pass; NULL with an exception; a
  // scalar).
  void adopt() {
    for (std::size_t b = 0; b < found_->offsets.size(); ++b) {
      offsets_.push_back(found_->offsets[b]);
      counts_.push_back(found_->counts[b]);
    }
    firsts_ = found_->firsts;
    total_ = found_->total;
  }
  PyArrayObject* recorded_output(std::size_t k) {
    recording::output& o = found_->outputs.at(k);
    return (PyArrayObject*)PyArray_New(&PyArray_Type, o.ndim, o.dims, o.typenum, NULL,
                                       o.elements.data(), 0, NPY_ARRAY_CARRAY_RO, NULL);
  }
  template <class A>
  void recorded_scalar(A& x, std::size_t k) {
    std::memcpy(&x, found_->outputs.at(k).elements.data(), sizeof x);
  }
  // Whether a record op's taped values are the plain pass's (`plain`, the op's output) up to
  // rounding: apart by at most 256 units in the last place of the array's largest magnitude (a
  // compiler contracting a*b+c differently moves a small element by more than its own ulps),
  // tighter than the pullback's check, since these values become the op's. No exception.
  template <class A>
  bool same_as_plain(PyArrayObject* taped, PyArrayObject* plain) {
    if (!taped || !plain || PyArray_TYPE(taped) != number_dtype<A>::typenum() ||
        !PyArray_SAMESHAPE(taped, plain))
      return false;
    PyArrayObject* values = float64_values((PyObject*)plain);
    A const* y = values ? contiguous<A>(taped) : NULL;
    if (!y) {
      PyErr_Clear();
      return false;
    }
    double const* e = (double const*)PyArray_DATA(values);
    npy_intp const n = PyArray_SIZE(taped);
    double scale = 0;
    for (npy_intp k = 0; k < n; ++k) scale = std::max(scale, std::fabs(e[k]));
    for (npy_intp k = 0; k < n; ++k)
      if (!same_as_plain(y[k], e[k], scale)) return false;
    return true;
  }
  template <class A>
  static bool same_as_plain(A const& taped, double plain, double scale = 0) {
    typedef decltype(A().v) value_type;
    double const got = (double)taped.v;
    if (got == plain || (std::isnan(got) && std::isnan(plain))) return true;
    double const ulp = std::numeric_limits<value_type>::epsilon();
    return std::fabs(got - plain) <= 256 * ulp * std::max(scale, std::fabs(plain));
  }
  // A record op's output: the values of `taped` (an array of taped numbers, checked as the
  // pullback checks it) into `*into`, an array of the op's output type; -1 with an exception.
  template <class A>
  int plain_output(PyArrayObject* taped, PyArrayObject** into, char const* what) {
    typedef decltype(A().v) value_type;
    int const typenum = sizeof(value_type) == 4 ? NPY_FLOAT32 : NPY_FLOAT64;
    if (check_output<A>(taped, NULL, what)) return -1;
    A const* y = contiguous<A>(taped);
    PyArrayObject* out = y ? writable_like(*into, typenum, taped) : NULL;
    if (!out) return -1;
    value_type* v = (value_type*)PyArray_DATA(out);
    npy_intp const n = PyArray_SIZE(out);
    for (npy_intp k = 0; k < n; ++k) v[k] = y[k].v;
    return 0;
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
    for (npy_intp e = 0; e < n; ++e) libsection::seed(tape_, adjoints_, y[e], g[e]);
    return 0;
  }
  template <class A>
  int seed(A const& out, double cotangent) {
    if (start_sweep()) return -1;
    libsection::seed(tape_, adjoints_, out, cotangent);
    return 0;
  }
  // The sweep, and the inputs' adjoints as their gradient; -1 with an exception.
  int sweep(char const* op, char const* files) {
    if (start_sweep() || usable(op, files, false)) return -1;
    std::size_t independent;
    {
      gil_given free;  // the sweep is as long as a pass
      independent = tape_.sweep(adjoints_);
    }
    if (found_) {
      found_->swept = true;
      libsection_rt->note_swept();
    }
    acc_.assign(total_, 0.0);
    for (std::size_t b = 0; b < firsts_.size(); ++b)
      for (npy_intp k = 0; k < counts_[b]; ++k) {
        acc_[offsets_[b] + k] = adjoints_[firsts_[b] + k];
        adjoints_[firsts_[b] + k] = 0;
      }
    if (independent == (std::size_t)total_) tape_.cleared();  // else zeroed before the next
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
  recording* found_;      // the recording swept here, none when this pass records
  bool records_ = false;  // this pass is a record op's, on a recording's tape
  std::vector<recording::output> kept_outputs_;
  std::vector<std::size_t> firsts_;  // per differentiated input: the place of its first element
  double* adjoints_ = nullptr;       // the tape's, zeroed at the first seed
};

}  // namespace libsection
#endif
