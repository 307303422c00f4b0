// What the drivers of a differentiated module share (forward_driver.h, reverse_driver.h): the
// Python references a call holds, the numbers' copies of the differentiated inputs and their
// numbering (each input a block of scalars), the checks of the op's outputs (arrays of the
// numbers, of the cotangents' shapes, their values those of the op's own module), the
// cotangents as float64 arrays, the gradient accumulated per scalar and handed back, and the
// settings a call reads (`derivative_settings`).
//
// C++ only. Embedded at build time (libsection/embed.cmake), these notes left out.
#ifndef LIBSECTION_DRIVER_H
#define LIBSECTION_DRIVER_H

namespace libsection {

// A derivative op's block runs without the GIL as the op's own does (LIBSECTION_NOGIL_REGION),
// but its driver calls NumPy between the passes: some twenty calls a call (the numbers'
// arrays, the outputs, the references it drops), each of which would take the GIL and give it
// up again. The driver holds it instead (`gil_held`, for the block) and gives it up around
// what is long: the passes of the op's code and the sweep (`gil_given`). Where the region kept
// the GIL (a thread alone in the interpreter) both do nothing.
static thread_local PyThreadState* gil_taken = nullptr;  // the state a gil_held took back
class gil_held {
 public:
  gil_held() : state_(libsection_gil_take()), outer_(gil_taken) {
    if (state_) gil_taken = state_;
  }
  gil_held(gil_held const&) = delete;
  gil_held& operator=(gil_held const&) = delete;
  ~gil_held() {
    if (!state_) return;
    gil_taken = outer_;
    libsection_gil_give(&state_);
  }

 private:
  PyThreadState* state_;
  PyThreadState* outer_;
};
class gil_given {
 public:
  gil_given() : state_(gil_taken) {
    if (!state_) return;
    gil_taken = nullptr;
    libsection_gil_give(&state_);  // as a wrapped call's end: the op's own calls take it back
  }
  gil_given(gil_given const&) = delete;
  gil_given& operator=(gil_given const&) = delete;
  ~gil_given() {
    if (!state_) return;
    libsection_gil_take();
    gil_taken = state_;
  }

 private:
  PyThreadState* state_;
};

// A call's bookkeeping (per differentiated input, per array it holds, the gradient of a few
// scalars): the first N items in place, more on the heap. A row of a batch is a call, so these
// are made for each row: a std::vector's allocations were much of a small call's cost.
template <class T, std::size_t N>
class small_vector {
 public:
  small_vector() = default;
  small_vector(small_vector const&) = delete;
  small_vector& operator=(small_vector const&) = delete;
  void push_back(T const& x) {
    if (size_ < N) {
      data_[size_++] = x;
      return;
    }
    if (data_ == in_place_) heap_.assign(in_place_, in_place_ + N);
    heap_.push_back(x);
    data_ = heap_.data();
    ++size_;
  }
  void assign(std::size_t n, T const& x) {
    if (n <= N) {
      heap_.clear();
      data_ = in_place_;
    } else {
      heap_.assign(n, x);
      data_ = heap_.data();
    }
    std::fill(data_, data_ + n, x);
    size_ = n;
  }
  T* data() { return data_; }
  T const* data() const { return data_; }
  std::size_t size() const { return size_; }
  T& operator[](std::size_t k) { return data_[k]; }
  T const& operator[](std::size_t k) const { return data_[k]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }

 private:
  T in_place_[N];
  T* data_ = in_place_;
  std::size_t size_ = 0;
  std::vector<T> heap_;
};

// LIBSECTION_DERIVATIVE_MODE and LIBSECTION_TAPE_MAX_BYTES, read at each call (so that a
// test or a session may change them between calls) with the rules base/settings.cpp checks
// them with before any build; -1 with a ValueError naming the variable for a bad value. Each
// thread keeps the texts it parsed last and what they set: a call that finds the same texts
// (the common case, and every row of a batch) compares them and parses nothing.
struct derivative_settings {
  enum mode_t { automatic, forward, reverse } mode = automatic;
  std::size_t tape_max_bytes = std::size_t(1) << 30;
  int read() {
    thread_local parsed last;  // zero-initialised: no text known yet
    char const* m = std::getenv("LIBSECTION_DERIVATIVE_MODE");
    if (!last.mode_text.same(m)) {
      last.mode_text.known = false;  // parsed again next time, unless this text parses
      last.mode = automatic;
      if (m && *m && parse_mode(m, last.mode))
        return refuse("LIBSECTION_DERIVATIVE_MODE", m, "auto, forward or reverse");
      last.mode_text.keep(m);
    }
    char const* b = std::getenv("LIBSECTION_TAPE_MAX_BYTES");
    if (!last.size_text.same(b)) {
      last.size_text.known = false;
      last.tape_max_bytes = derivative_settings().tape_max_bytes;
      if (b && *b && parse_size(b, last.tape_max_bytes))
        return refuse("LIBSECTION_TAPE_MAX_BYTES", b,
                      "a positive number of bytes with an optional K, M or G suffix");
      last.size_text.keep(b);
    }
    mode = last.mode;
    tape_max_bytes = last.tape_max_bytes;
    return 0;
  }

 private:
  // A variable's text as last parsed ("" when unset); none (`known` false) before the first
  // parse, after a bad value, or for a text longer than any good one.
  struct kept_text {
    bool known;
    char text[32];
    bool same(char const* now) const { return known && !std::strcmp(text, now ? now : ""); }
    void keep(char const* now) {
      if (!now) now = "";
      std::size_t const length = std::strlen(now);
      known = length < sizeof text;
      if (known) std::memcpy(text, now, length + 1);
    }
  };
  // A thread's last texts and what they set.
  struct parsed {
    kept_text mode_text, size_text;
    mode_t mode;
    std::size_t tape_max_bytes;
  };
  static int parse_mode(char const* m, mode_t& into) {
    if (!std::strcmp(m, "auto")) into = automatic;
    else if (!std::strcmp(m, "forward")) into = forward;
    else if (!std::strcmp(m, "reverse")) into = reverse;
    else return -1;
    return 0;
  }
  static int parse_size(char const* text, std::size_t& into) {
    char* end = NULL;
    unsigned long long value = std::strtoull(text, &end, 10);
    if (end == text || *text < '0' || *text > '9') return -1;
    int shift = (*end == 'K' || *end == 'k')   ? 10
                : (*end == 'M' || *end == 'm') ? 20
                : (*end == 'G' || *end == 'g') ? 30
                                               : 0;
    if (shift) ++end;
    if (*end || value == 0 || value > (~0ULL >> (shift + 1))) return -1;
    into = (std::size_t)(value << shift);
    return 0;
  }
  static int refuse(char const* name, char const* value, char const* wanted) {
    PyErr_Format(PyExc_ValueError, "%s=%.60s: give %s", name, value, wanted);
    return -1;
  }
};

// The arrays of numbers a derivative op's instance keeps between its calls (a member of its
// struct): per differentiated input and kind of numbers, the copy of the last call, which the
// next call copies its input into when nothing else holds it (a row of a batch is a call, and a
// new array was a fifth of a small call's cost). Only small ones are kept: a large array's
// allocation is little beside filling it.
class kept_arrays {
 public:
  static constexpr std::size_t inputs = 8;
  static constexpr npy_intp max_elements = 1024;
  kept_arrays() : entries_() {}
  kept_arrays(kept_arrays const&) = delete;
  kept_arrays& operator=(kept_arrays const&) = delete;
  ~kept_arrays() {
    for (PyArrayObject* a : entries_) Py_XDECREF(a);
  }
  // A C-contiguous array of `typenum` shaped as `like`, for input `block`: the kept one when it
  // fits and no one else holds it, else a new one (kept in its place when small); a new
  // reference, NULL with an exception.
  PyArrayObject* array(std::size_t block, int typenum, PyArrayObject* like) {
    PyArrayObject** entry = block < inputs ? place(block, typenum) : NULL;
    PyArrayObject* a = entry ? *entry : NULL;
    if (a && Py_REFCNT(a) == 1 && PyArray_TYPE(a) == typenum && PyArray_ISCARRAY(a) &&
        PyArray_SAMESHAPE(a, like)) {
      Py_INCREF(a);
      return a;
    }
    a = (PyArrayObject*)PyArray_EMPTY(PyArray_NDIM(like), PyArray_DIMS(like), typenum, 0);
    if (a && entry && PyArray_SIZE(a) <= max_elements) {
      Py_XDECREF(*entry);
      Py_INCREF(a);
      *entry = a;
    }
    return a;
  }

 private:
  // Two per input, one per kind of numbers a module has: the first for the kind found there
  // (or when empty), the second for the other.
  PyArrayObject** place(std::size_t block, int typenum) {
    PyArrayObject** two = entries_ + 2 * block;
    return !two[0] || PyArray_TYPE(two[0]) == typenum ? two : two + 1;
  }
  PyArrayObject* entries_[2 * inputs];
};

class driver {
 public:
  // `kind`: what the op's code computes with here ("dual numbers", "taped numbers").
  explicit driver(char const* kind) : kind_(kind) {}
  driver(driver const&) = delete;
  driver& operator=(driver const&) = delete;
  ~driver() {
    for (PyObject** p : owned_) Py_XDECREF(*p);
    for (PyObject* o : held_) Py_DECREF(o);
  }
  // The instance's arrays the copies of the inputs are made into (none: new ones each call).
  void keep_in(kept_arrays& kept) { kept_ = &kept; }
  // An array the op's code may replace (its outputs): released at the end, whatever it is then.
  template <class P>
  void own(P** p) {
    owned_.push_back((PyObject**)p);
  }

  // This pass's values of `out` against the op's own module's (`expected`): the same code on
  // the same values, so they differ only where the code reads or writes the numbers as
  // something else (a memcpy of n * sizeof(double), a stride divided by sizeof(double)),
  // which would make the derivatives wrong too; -1 with an exception saying so.
  template <class D>
  int check_values(PyArrayObject* out, PyObject* expected, char const* what) {
    PyArrayObject* values = float64_values(expected);
    if (!values || check_output<D>(out, values, what)) return -1;
    D const* y = contiguous<D>(out);
    if (!y) return -1;
    double const* e = (double const*)PyArray_DATA(values);
    npy_intp const n = PyArray_SIZE(out);
    for (npy_intp k = 0; k < n; ++k)
      if (!same_value((double)y[k].v, e[k])) return values_differ(what, k, (double)y[k].v, e[k]);
    return 0;
  }
  template <class D>
  int check_values(D const& out, double expected, char const* what) {
    return same_value((double)out.v, expected) ? 0
                                               : values_differ(what, 0, (double)out.v, expected);
  }
  // The gradient of input block `b`, shaped and typed as `like` (the input): into `*into`,
  // written into the array there when it is one of that shape and type (an output PyTensor
  // keeps for reuse, a row of a batch's output), else into a new one.
  int gradient(PyArrayObject** into, PyArrayObject* like, int b) {
    PyArrayObject* out = writable_like(*into, PyArray_TYPE(like), like);
    if (!out) return -1;
    double const* acc = acc_.data() + offsets_[b];
    npy_intp const n = PyArray_SIZE(out);
    if (PyArray_TYPE(out) == NPY_FLOAT32) {
      for (npy_intp k = 0; k < n; ++k) ((npy_float32*)PyArray_DATA(out))[k] = (npy_float32)acc[k];
    } else {
      for (npy_intp k = 0; k < n; ++k) ((npy_float64*)PyArray_DATA(out))[k] = acc[k];
    }
    return 0;
  }
  double gradient(int b) const { return acc_[offsets_[b]]; }

 protected:
  // `*into` when it is an array of `like`'s shape and of type `typenum` that can be written in
  // place (C-contiguous, aligned, native byte order); else a new one put there.
  static PyArrayObject* writable_like(PyArrayObject*& into, int typenum, PyArrayObject* like) {
    if (into && PyArray_Check((PyObject*)into) && PyArray_TYPE(into) == typenum &&
        PyArray_ISCARRAY(into) && PyArray_ISNOTSWAPPED(into) && PyArray_SAMESHAPE(into, like))
      return into;
    PyArrayObject* made =
        (PyArrayObject*)PyArray_EMPTY(PyArray_NDIM(like), PyArray_DIMS(like), typenum, 0);
    if (!made) return NULL;
    Py_XDECREF(into);
    into = made;
    return made;
  }
  // Whether NumPy would hand `o` back as it is for float64 values in C order: its values are
  // read in place, with no new array.
  static bool float64_in_place(PyObject* o) {
    return PyArray_Check(o) && PyArray_TYPE((PyArrayObject*)o) == NPY_FLOAT64 &&
           PyArray_ISCARRAY_RO((PyArrayObject*)o) && PyArray_ISNOTSWAPPED((PyArrayObject*)o);
  }
  PyObject* held(PyObject* o) {
    if (o) held_.push_back(o);
    return o;
  }
  // A new C-contiguous array of numbers holding `plain`'s values (no derivatives yet), its
  // elements numbered as the next block; NULL with an exception.
  template <class D>
  PyArrayObject* number_array(PyArrayObject* plain) {
    PyArrayObject* values = float64_values((PyObject*)plain);
    int const typenum = number_dtype<D>::typenum();
    if (!values || typenum == NPY_NOTYPE) return NULL;
    PyArrayObject* out =
        kept_ ? kept_->array(offsets_.size(), typenum, plain)
              : (PyArrayObject*)PyArray_EMPTY(PyArray_NDIM(plain), PyArray_DIMS(plain), typenum, 0);
    if (!out) return NULL;
    double const* v = (double const*)PyArray_DATA(values);
    D* x = (D*)PyArray_DATA(out);
    npy_intp const n = PyArray_SIZE(out);
    for (npy_intp k = 0; k < n; ++k) x[k] = D(v[k]);
    add_block(n);
    return out;
  }
  void add_block(npy_intp n) {
    offsets_.push_back(total_);
    counts_.push_back(n);
    total_ += n;
  }
  // `given`'s values as float64 in C order: `given` itself when they are (the caller holds it
  // for the call), else a copy the driver holds.
  PyArrayObject* float64_values(PyObject* given) {
    if (float64_in_place(given)) return (PyArrayObject*)given;
    return (PyArrayObject*)held(PyArray_FROMANY(given, NPY_FLOAT64, 0, 0, NPY_ARRAY_CARRAY_RO));
  }
  // The elements of an output of numbers in C order (a copy when it is not C-contiguous).
  template <class D>
  D const* contiguous(PyArrayObject* out) {
    if (PyArray_IS_C_CONTIGUOUS(out)) return (D const*)PyArray_DATA(out);
    PyObject* copy = held(PyArray_NewCopy(out, NPY_CORDER));
    return copy ? (D const*)PyArray_DATA((PyArrayObject*)copy) : NULL;
  }
  // The op's output: an array of numbers (so made with TYPENUM_OUTPUT_i) of the cotangent's shape.
  template <class D>
  int check_output(PyArrayObject* out, PyArrayObject* like, char const* what) {
    if (!out) {
      PyErr_Format(PyExc_ValueError, "%s is NULL after the op's code ran", what);
      return -1;
    }
    if (PyArray_TYPE(out) != number_dtype<D>::typenum()) {
      PyObject* got = PyObject_Str((PyObject*)PyArray_DESCR(out));
      PyErr_Format(PyExc_TypeError,
                   "%s is an array of %s, not of the op's DTYPE_OUTPUT: its gradient is derived by "
                   "running its C code "
                   "on %s, so it must make its outputs with their TYPENUM_OUTPUT_i "
                   "(PyArray_EMPTY(nd, dims, TYPENUM_OUTPUT_0, 0)), not a fixed NPY_ type",
                   what, got ? PyUnicode_AsUTF8(got) : "?", kind_);
      Py_XDECREF(got);
      return -1;
    }
    if (like && !PyArray_SAMESHAPE(out, like)) {
      PyErr_Format(
          PyExc_ValueError, "%s has %ld elements in %d dimensions, its cotangent %ld in %d", what,
          (long)PyArray_SIZE(out), PyArray_NDIM(out), (long)PyArray_SIZE(like), PyArray_NDIM(like));
      return -1;
    }
    return 0;
  }
  // Equal, both NaN, or apart by rounding (a compiler contracting a*b+c differently): relative
  // to the op's own value, so a huge wrong value (garbage read as a double) is not "close".
  static bool same_value(double got, double expected) {
    if (got == expected || (std::isnan(got) && std::isnan(expected))) return true;
    double const gap = std::fabs(got - expected);
    return gap <= 1e-6 * std::fabs(expected) || gap <= 1e-12;
  }
  int values_differ(char const* what, npy_intp k, double got, double expected) const {
    char g[32], e[32];
    std::snprintf(g, sizeof g, "%.17g", got);
    std::snprintf(e, sizeof e, "%.17g", expected);
    PyErr_Format(
        PyExc_ValueError,
        "%s: its gradient is derived by running its C code on %s, and there element %ld "
        "of its value is %s where the op's own module computes %s. The code reads or writes the "
        "values of a float input or output as something other than its DTYPE macro: a memcpy of "
        "n * sizeof(double) (write n * sizeof(DTYPE_INPUT_0), or PyArray_NBYTES), a stride divided "
        "by sizeof(double) (divide by PyArray_ITEMSIZE), a cast to a plain floating type. The "
        "derived gradient would be wrong, so it is refused; or give the op a pullback of its own",
        what, kind_, (long)k, g, e);
    return -1;
  }

  char const* kind_;
  kept_arrays* kept_ = NULL;
  small_vector<npy_intp, 8> offsets_, counts_;  // per differentiated input: first scalar, size
  npy_intp total_ = 0;
  small_vector<double, 16> acc_;  // the gradient, per scalar
  small_vector<PyObject**, 8> owned_;
  small_vector<PyObject*, 8> held_;
};

}  // namespace libsection
#endif
