// The driver of forward mode (generate/derivative.cpp): dual copies of the differentiated
// inputs, the seeds of each pass (W unit tangents, one per differentiated scalar), and the
// contraction of the outputs' tangents with the cotangents (a vector-Jacobian product from
// ceil(P / W) forward passes); or, for a pushforward (W = 1), the given tangents and the
// outputs' tangents of one pass.
//
// C++ only. Embedded at build time (libsection/embed.cmake), these notes left out.
#ifndef LIBSECTION_FORWARD_DRIVER_H
#define LIBSECTION_FORWARD_DRIVER_H

namespace libsection {

// The tangents of one input carrying derivatives: lane l of element k at first + k*step + l*lane.
struct tangent_block {
  char* first;
  npy_intp count, step, lane;
  bool single;  // float32 tangents
};

template <int W>
class forward_passes : public driver {
 public:
  forward_passes() : driver("dual numbers") {}

  // A dual copy of `plain`: NULL with an exception.
  template <class D>
  PyArrayObject* dual_array(PyArrayObject* plain) {
    PyArrayObject* out = number_array<D>(plain);
    if (out) add_tangents<D>((D*)PyArray_DATA(out), PyArray_SIZE(out));
    return out;
  }
  template <class D>
  void dual_scalar(D& x, double value) {
    x = D(value);
    add_block(1);
    add_tangents<D>(&x, 1);
  }

  // ---- pullback: W scalars per pass, then their contraction with the cotangents
  // Seeds the next pass's W unit tangents; false once every scalar had its pass.
  bool next_pass() {
    if (pass_begin_ == 0 && !started_) {
      started_ = true;
      acc_.assign(total_, 0.0);
    } else {
      set_lanes(pass_begin_, 0.0);
      pass_begin_ += W;
    }
    if (pass_begin_ >= total_) return false;
    set_lanes(pass_begin_, 1.0);
    return true;
  }
  // Adds `cotangent` . (this pass's tangents of `out`) to the gradient; -1 with an exception when
  // `out` is not the array of duals the cotangent's shape asks for.
  template <class D>
  int contract(PyArrayObject* out, PyObject* cotangent, char const* what) {
    PyArrayObject* values = float64_values(cotangent);
    if (!values || check_output<D>(out, values, what)) return -1;
    D const* y = contiguous<D>(out);
    if (!y) return -1;
    double const* g = (double const*)PyArray_DATA(values);
    npy_intp const n = PyArray_SIZE(out);
    for (npy_intp e = 0; e < n; ++e) add_lanes(g[e], y[e]);
    return 0;
  }
  template <class D>
  void contract(D const& out, double cotangent) {
    add_lanes(cotangent, out);
  }

  // ---- pushforward (W == 1): the given tangents, one pass
  int tangent(int b, PyObject* given) {
    PyArrayObject* values = float64_values(given);
    if (!values) return -1;
    if (PyArray_SIZE(values) != blocks_[b].count) {
      PyErr_Format(PyExc_ValueError,
                   "the tangent of a differentiated input has %ld elements, the input %ld",
                   (long)PyArray_SIZE(values), (long)blocks_[b].count);
      return -1;
    }
    double const* t = (double const*)PyArray_DATA(values);
    for (npy_intp k = 0; k < blocks_[b].count; ++k) set(blocks_[b], k, 0, t[k]);
    return 0;
  }
  void tangent(int b, double given) { set(blocks_[b], 0, 0, given); }
  // The tangents of output `out` (lane 0) into `*into`, as an array of its scalar type (the one
  // there when it can be written in place, `writable_like`).
  template <class D>
  int output_tangent(PyArrayObject* out, PyArrayObject** into, char const* what) {
    if (check_output<D>(out, NULL, what)) return -1;
    int const typenum = sizeof(typename D::scalar) == 4 ? NPY_FLOAT32 : NPY_FLOAT64;
    PyArrayObject* made = writable_like(*into, typenum, out);
    if (!made) return -1;
    D const* y = contiguous<D>(out);
    if (!y) return -1;
    npy_intp const n = PyArray_SIZE(out);
    for (npy_intp e = 0; e < n; ++e) {
      if (typenum == NPY_FLOAT32) ((npy_float32*)PyArray_DATA(made))[e] = (npy_float32)y[e].d[0];
      else ((npy_float64*)PyArray_DATA(made))[e] = (npy_float64)y[e].d[0];
    }
    return 0;
  }

 private:
  template <class D>
  void add_tangents(D* x, npy_intp n) {
    tangent_block b = {(char*)x->d, n, (npy_intp)sizeof(D), (npy_intp)sizeof(x->v),
                       sizeof(x->v) == 4};
    blocks_.push_back(b);
  }
  static void set(tangent_block const& b, npy_intp k, int lane, double value) {
    char* p = b.first + k * b.step + lane * b.lane;
    if (b.single) *(float*)p = (float)value;
    else *(double*)p = value;
  }
  // Lane l of the scalar numbered begin + l, for every lane with a scalar.
  void set_lanes(npy_intp begin, double value) {
    std::size_t b = 0;
    for (int l = 0; l < W && begin + l < total_; ++l) {
      npy_intp const g = begin + l;
      while (offsets_[b] + counts_[b] <= g) ++b;
      set(blocks_[b], g - offsets_[b], l, value);
    }
  }
  template <class D>
  void add_lanes(double g, D const& y) {
    if (g == 0) return;  // no contribution (and no NaN from 0 * inf)
    double* acc = acc_.data() + pass_begin_;
    int const lanes = (int)std::min<npy_intp>(W, total_ - pass_begin_);
    for (int l = 0; l < lanes; ++l) acc[l] += g * (double)y.d[l];
  }

  small_vector<tangent_block, 8> blocks_;
  npy_intp pass_begin_ = 0;
  bool started_ = false;
};

}  // namespace libsection
#endif
