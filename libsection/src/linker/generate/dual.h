// clang-format off
// The element type of a differentiated module (generate/derivative.cpp): a dual number, a
// value and W tangents (partial derivatives), which the op's own C code computes with when its
// `DTYPE_INPUT_i`/`DTYPE_OUTPUT_i` name it. Arithmetic, comparisons (on the value) and the C
// math functions carry the tangents along; nothing converts a dual to a plain `double`, so a
// value hidden in one is a compile error (build/compile_hints.cpp tells it in the op's terms),
// never a derivative silently lost. Integer conversions (`(int)x`, an index) are explicit.
//
// Arrays of duals are NumPy arrays of a user dtype registered once per process per (scalar
// type, W) (`dual_dtype`): `PyArray_EMPTY(nd, dims, TYPENUM_OUTPUT_0, 0)`, `PyArray_ZEROS`,
// `PyArray_FROM_OTF` and `PyArray_GETPTR*` work on them unchanged. `derivative<W>` is the
// driver the generated code calls: dual copies of the inputs, the seeds of each pass, and the
// contraction of output tangents with cotangents (a vector-Jacobian product from forward
// passes).
//
// C++ only: a differentiated module is compiled as C++ whatever the op is declared. Embedded
// at build time (libsection/embed.cmake), these notes left out.
#ifndef LIBSECTION_DUAL_H
#define LIBSECTION_DUAL_H
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

namespace libsection {

template <class T, int W> struct dual;

template <class X> struct is_dual : std::false_type {};
template <class T, int W> struct is_dual<dual<T, W>> : std::true_type {};
template <class A> using if_number = std::enable_if_t<std::is_arithmetic<A>::value, int>;
// A dual's scalar with a plain number: C's usual conversions (float with double is double).
template <class T, class A>
using mixed = std::conditional_t<std::is_floating_point<A>::value, std::common_type_t<T, A>, T>;

template <class T, int W>
struct dual {
  static_assert(std::is_floating_point<T>::value, "a dual's scalar is a floating type");
  typedef T scalar;
  T v;
  T d[W];
  dual() = default;
  template <class A, if_number<A> = 0>
  dual(A a) : v(static_cast<T>(a)), d() {}
  template <class U, std::enable_if_t<!std::is_same<U, T>::value, int> = 0>
  dual(dual<U, W> const& o) : v(static_cast<T>(o.v)) {
    for (int i = 0; i < W; ++i) d[i] = static_cast<T>(o.d[i]);
  }
  template <class I, std::enable_if_t<std::is_integral<I>::value, int> = 0>
  explicit operator I() const { return static_cast<I>(v); }
  template <class X> dual& operator+=(X const& o) { return *this = *this + o; }
  template <class X> dual& operator-=(X const& o) { return *this = *this - o; }
  template <class X> dual& operator*=(X const& o) { return *this = *this * o; }
  template <class X> dual& operator/=(X const& o) { return *this = *this / o; }
  dual& operator++() { v += 1; return *this; }
  dual& operator--() { v -= 1; return *this; }
  dual operator++(int) { dual old = *this; v += 1; return old; }
  dual operator--(int) { dual old = *this; v -= 1; return old; }
};

// A dual whose value is `value` and whose tangents are `slope` times `a`'s.
template <class T, class U, int W>
inline dual<T, W> chain(dual<U, W> const& a, T value, T slope) {
  dual<T, W> r;
  r.v = value;
  for (int i = 0; i < W; ++i) r.d[i] = slope * a.d[i];
  return r;
}
// `sa` times `a`'s tangents plus `sb` times `b`'s.
template <class T, class U, class V, int W>
inline dual<T, W> chain2(dual<U, W> const& a, dual<V, W> const& b, T value, T sa, T sb) {
  dual<T, W> r;
  r.v = value;
  for (int i = 0; i < W; ++i) r.d[i] = sa * a.d[i] + sb * b.d[i];
  return r;
}

template <class T, int W> inline dual<T, W> operator+(dual<T, W> const& a) { return a; }
template <class T, int W> inline dual<T, W> operator-(dual<T, W> const& a) {
  return chain(a, T(-a.v), T(-1));
}
template <class T, class U, int W>
inline dual<std::common_type_t<T, U>, W> operator+(dual<T, W> const& a, dual<U, W> const& b) {
  typedef std::common_type_t<T, U> R;
  return chain2(a, b, R(a.v + b.v), R(1), R(1));
}
template <class T, class U, int W>
inline dual<std::common_type_t<T, U>, W> operator-(dual<T, W> const& a, dual<U, W> const& b) {
  typedef std::common_type_t<T, U> R;
  return chain2(a, b, R(a.v - b.v), R(1), R(-1));
}
template <class T, class U, int W>
inline dual<std::common_type_t<T, U>, W> operator*(dual<T, W> const& a, dual<U, W> const& b) {
  typedef std::common_type_t<T, U> R;
  return chain2(a, b, R(a.v * b.v), R(b.v), R(a.v));
}
template <class T, class U, int W>
inline dual<std::common_type_t<T, U>, W> operator/(dual<T, W> const& a, dual<U, W> const& b) {
  typedef std::common_type_t<T, U> R;
  R const q = R(a.v) / R(b.v);
  return chain2(a, b, q, R(1) / R(b.v), -q / R(b.v));
}
template <class T, int W, class A, if_number<A> = 0>
inline dual<mixed<T, A>, W> operator+(dual<T, W> const& a, A b) {
  return chain(a, mixed<T, A>(a.v + b), mixed<T, A>(1));
}
template <class T, int W, class A, if_number<A> = 0>
inline dual<mixed<T, A>, W> operator+(A b, dual<T, W> const& a) {
  return chain(a, mixed<T, A>(b + a.v), mixed<T, A>(1));
}
template <class T, int W, class A, if_number<A> = 0>
inline dual<mixed<T, A>, W> operator-(dual<T, W> const& a, A b) {
  return chain(a, mixed<T, A>(a.v - b), mixed<T, A>(1));
}
template <class T, int W, class A, if_number<A> = 0>
inline dual<mixed<T, A>, W> operator-(A b, dual<T, W> const& a) {
  return chain(a, mixed<T, A>(b - a.v), mixed<T, A>(-1));
}
template <class T, int W, class A, if_number<A> = 0>
inline dual<mixed<T, A>, W> operator*(dual<T, W> const& a, A b) {
  return chain(a, mixed<T, A>(a.v * b), mixed<T, A>(b));
}
template <class T, int W, class A, if_number<A> = 0>
inline dual<mixed<T, A>, W> operator*(A b, dual<T, W> const& a) {
  return chain(a, mixed<T, A>(b * a.v), mixed<T, A>(b));
}
template <class T, int W, class A, if_number<A> = 0>
inline dual<mixed<T, A>, W> operator/(dual<T, W> const& a, A b) {
  typedef mixed<T, A> R;
  return chain(a, R(a.v / b), R(1) / R(b));
}
template <class T, int W, class A, if_number<A> = 0>
inline dual<mixed<T, A>, W> operator/(A b, dual<T, W> const& a) {
  typedef mixed<T, A> R;
  R const q = R(b) / R(a.v);
  return chain(a, q, -q / R(a.v));
}

// Comparisons look at the values only, as the branches of the op's code do.
template <class X> inline auto value_of(X const& x) -> std::enable_if_t<!is_dual<X>::value, X> { return x; }
template <class T, int W> inline T value_of(dual<T, W> const& x) { return x.v; }
#define LIBSECTION_DUAL_COMPARE(op)                                                        \
  template <class T, class U, int W>                                                      \
  inline bool operator op(dual<T, W> const& a, dual<U, W> const& b) { return a.v op b.v; } \
  template <class T, int W, class A, if_number<A> = 0>                                    \
  inline bool operator op(dual<T, W> const& a, A b) { return a.v op b; }                  \
  template <class T, int W, class A, if_number<A> = 0>                                    \
  inline bool operator op(A b, dual<T, W> const& a) { return b op a.v; }
LIBSECTION_DUAL_COMPARE(==)
LIBSECTION_DUAL_COMPARE(!=)
LIBSECTION_DUAL_COMPARE(<)
LIBSECTION_DUAL_COMPARE(<=)
LIBSECTION_DUAL_COMPARE(>)
LIBSECTION_DUAL_COMPARE(>=)
#undef LIBSECTION_DUAL_COMPARE

// The digamma function (the derivative of lgamma), which C's math library lacks: the
// recurrence up to 10, then the asymptotic series (error below 1e-15); reflection below 0.
inline double digamma(double x) {
  double const pi = 3.14159265358979323846;
  if (x <= 0 && std::floor(x) == x) return std::numeric_limits<double>::quiet_NaN();
  if (x < 0) return digamma(1 - x) - pi / std::tan(pi * x);
  double shift = 0;
  while (x < 10) {
    shift -= 1 / x;
    x += 1;
  }
  double const f = 1 / (x * x);
  double const series =
      f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132 - f * (691.0 / 32760))))));
  return shift + std::log(x) - 0.5 / x - series;
}

// f(dual) for a function of one argument: its value and its derivative at `x`.
#define LIBSECTION_DUAL_UNARY(name, value, slope)                       \
  template <class T, int W> inline dual<T, W> name(dual<T, W> const& a) { \
    T const x = a.v;                                                      \
    T const y = value;                                                    \
    return chain(a, y, T(slope));                                         \
  }
LIBSECTION_DUAL_UNARY(exp, std::exp(x), y)
LIBSECTION_DUAL_UNARY(exp2, std::exp2(x), y * T(0.693147180559945309417))
LIBSECTION_DUAL_UNARY(expm1, std::expm1(x), std::exp(x))
LIBSECTION_DUAL_UNARY(log, std::log(x), T(1) / x)
LIBSECTION_DUAL_UNARY(log2, std::log2(x), T(1) / (x * T(0.693147180559945309417)))
LIBSECTION_DUAL_UNARY(log10, std::log10(x), T(1) / (x * T(2.30258509299404568402)))
LIBSECTION_DUAL_UNARY(log1p, std::log1p(x), T(1) / (T(1) + x))
LIBSECTION_DUAL_UNARY(sqrt, std::sqrt(x), T(0.5) / y)
LIBSECTION_DUAL_UNARY(cbrt, std::cbrt(x), T(1) / (T(3) * y * y))
LIBSECTION_DUAL_UNARY(sin, std::sin(x), std::cos(x))
LIBSECTION_DUAL_UNARY(cos, std::cos(x), -std::sin(x))
LIBSECTION_DUAL_UNARY(tan, std::tan(x), T(1) + y * y)
LIBSECTION_DUAL_UNARY(asin, std::asin(x), T(1) / std::sqrt(T(1) - x * x))
LIBSECTION_DUAL_UNARY(acos, std::acos(x), T(-1) / std::sqrt(T(1) - x * x))
LIBSECTION_DUAL_UNARY(atan, std::atan(x), T(1) / (T(1) + x * x))
LIBSECTION_DUAL_UNARY(sinh, std::sinh(x), std::cosh(x))
LIBSECTION_DUAL_UNARY(cosh, std::cosh(x), std::sinh(x))
LIBSECTION_DUAL_UNARY(tanh, std::tanh(x), T(1) - y * y)
LIBSECTION_DUAL_UNARY(asinh, std::asinh(x), T(1) / std::sqrt(x * x + T(1)))
LIBSECTION_DUAL_UNARY(acosh, std::acosh(x), T(1) / std::sqrt(x * x - T(1)))
LIBSECTION_DUAL_UNARY(atanh, std::atanh(x), T(1) / (T(1) - x * x))
LIBSECTION_DUAL_UNARY(erf, std::erf(x), T(1.12837916709551257390) * std::exp(-x * x))
LIBSECTION_DUAL_UNARY(erfc, std::erfc(x), T(-1.12837916709551257390) * std::exp(-x * x))
LIBSECTION_DUAL_UNARY(lgamma, std::lgamma(x), T(digamma(x)))
LIBSECTION_DUAL_UNARY(tgamma, std::tgamma(x), y * T(digamma(x)))
// |x|: the sign of x, 0 at 0 (as JAX and PyTensor take it).
LIBSECTION_DUAL_UNARY(fabs, std::fabs(x), x > 0 ? T(1) : x < 0 ? T(-1) : T(0))
LIBSECTION_DUAL_UNARY(abs, std::fabs(x), x > 0 ? T(1) : x < 0 ? T(-1) : T(0))
// Steps: zero derivative almost everywhere.
LIBSECTION_DUAL_UNARY(floor, std::floor(x), T(0))
LIBSECTION_DUAL_UNARY(ceil, std::ceil(x), T(0))
LIBSECTION_DUAL_UNARY(round, std::round(x), T(0))
LIBSECTION_DUAL_UNARY(trunc, std::trunc(x), T(0))
LIBSECTION_DUAL_UNARY(rint, std::rint(x), T(0))
LIBSECTION_DUAL_UNARY(nearbyint, std::nearbyint(x), T(0))
// NumPy's npy_math functions that are functions, not macros for the C names.
LIBSECTION_DUAL_UNARY(npy_sin, std::sin(x), std::cos(x))
LIBSECTION_DUAL_UNARY(npy_cos, std::cos(x), -std::sin(x))
LIBSECTION_DUAL_UNARY(npy_tan, std::tan(x), T(1) + y * y)
LIBSECTION_DUAL_UNARY(npy_log2, std::log2(x), T(1) / (x * T(0.693147180559945309417)))
#undef LIBSECTION_DUAL_UNARY

template <class T, int W> inline long lround(dual<T, W> const& a) { return std::lround(a.v); }
template <class T, int W> inline long lrint(dual<T, W> const& a) { return std::lrint(a.v); }
template <class T, int W> inline bool isnan(dual<T, W> const& a) { return std::isnan(a.v); }
template <class T, int W> inline bool isinf(dual<T, W> const& a) { return std::isinf(a.v); }
template <class T, int W> inline bool isfinite(dual<T, W> const& a) { return std::isfinite(a.v); }
template <class T, int W> inline bool isnormal(dual<T, W> const& a) { return std::isnormal(a.v); }
template <class T, int W> inline bool signbit(dual<T, W> const& a) { return std::signbit(a.v); }
template <class T, int W> inline dual<T, W> ldexp(dual<T, W> const& a, int e) {
  return chain(a, T(std::ldexp(a.v, e)), T(std::ldexp(T(1), e)));
}

// Functions of two arguments, each for (dual, dual), (dual, number) and (number, dual): the
// value and the two partial derivatives at (x, y) (`dx`, `dy`).
#define LIBSECTION_DUAL_BINARY(name, value, dx, dy)                                         \
  template <class T, class U, int W>                                                        \
  inline dual<std::common_type_t<T, U>, W> name(dual<T, W> const& a, dual<U, W> const& b) { \
    typedef std::common_type_t<T, U> R;                                                     \
    R const x = a.v, y = b.v, z = value;                                                    \
    return chain2(a, b, z, R(dx), R(dy));                                                   \
  }                                                                                         \
  template <class T, int W, class A, if_number<A> = 0>                                      \
  inline dual<mixed<T, A>, W> name(dual<T, W> const& a, A bv) {                             \
    typedef mixed<T, A> R;                                                                  \
    R const x = a.v, y = R(bv), z = value;                                                  \
    (void)y;                                                                                \
    return chain(a, z, R(dx));                                                              \
  }                                                                                         \
  template <class T, int W, class A, if_number<A> = 0>                                      \
  inline dual<mixed<T, A>, W> name(A av, dual<T, W> const& b) {                             \
    typedef mixed<T, A> R;                                                                  \
    R const x = R(av), y = b.v, z = value;                                                  \
    (void)x;                                                                                \
    return chain(b, z, R(dy));                                                              \
  }
// x**y: y x**(y-1) (0 for y == 0, as x**0 is 1 everywhere) and x**y log x (0 where x**y is).
LIBSECTION_DUAL_BINARY(pow, std::pow(x, y), y == 0 ? R(0) : y * std::pow(x, y - 1),
                       z == 0 ? R(0) : z * std::log(x))
LIBSECTION_DUAL_BINARY(atan2, std::atan2(x, y), y / (x * x + y * y), -x / (x * x + y * y))
LIBSECTION_DUAL_BINARY(npy_atan2, std::atan2(x, y), y / (x * x + y * y), -x / (x * x + y * y))
LIBSECTION_DUAL_BINARY(hypot, std::hypot(x, y), z == 0 ? R(0) : x / z, z == 0 ? R(0) : y / z)
LIBSECTION_DUAL_BINARY(npy_hypot, std::hypot(x, y), z == 0 ? R(0) : x / z, z == 0 ? R(0) : y / z)
// The one chosen, as fmax and fmin choose (a NaN loses).
LIBSECTION_DUAL_BINARY(fmax, std::fmax(x, y), (x >= y || std::isnan(y)) ? R(1) : R(0),
                       (x >= y || std::isnan(y)) ? R(0) : R(1))
LIBSECTION_DUAL_BINARY(fmin, std::fmin(x, y), (x <= y || std::isnan(y)) ? R(1) : R(0),
                       (x <= y || std::isnan(y)) ? R(0) : R(1))
LIBSECTION_DUAL_BINARY(fmod, std::fmod(x, y), R(1), -std::trunc(x / y))
LIBSECTION_DUAL_BINARY(copysign, std::copysign(x, y), std::signbit(x) == std::signbit(y) ? R(1) : R(-1),
                       R(0))
LIBSECTION_DUAL_BINARY(fdim, std::fdim(x, y), x > y ? R(1) : R(0), x > y ? R(-1) : R(0))
#undef LIBSECTION_DUAL_BINARY

// min and max as std::min and std::max choose (the first on a tie), a dual with a number too.
template <class X, class Y>
using if_dual_pair = std::enable_if_t<is_dual<X>::value || is_dual<Y>::value, int>;
template <class X, class Y, if_dual_pair<X, Y> = 0>
inline auto max(X const& a, Y const& b) -> decltype(a + b) {
  typedef decltype(a + b) R;
  return value_of(a) < value_of(b) ? R(b) : R(a);
}
template <class X, class Y, if_dual_pair<X, Y> = 0>
inline auto min(X const& a, Y const& b) -> decltype(a + b) {
  typedef decltype(a + b) R;
  return value_of(b) < value_of(a) ? R(b) : R(a);
}
template <class X, class Y, class Z, std::enable_if_t<is_dual<X>::value || is_dual<Y>::value || is_dual<Z>::value, int> = 0>
inline auto fma(X const& a, Y const& b, Z const& c) -> decltype(a * b + c) {
  return a * b + c;
}

// ---- arrays of duals: a NumPy user dtype per (scalar type, W) --------------------------------

template <class D> struct dual_dtype;
template <class T, int W>
struct dual_dtype<dual<T, W>> {
  typedef dual<T, W> D;
  // The scalar type's name, which names the dtype (`numpy.dtype[dual_float64_3]`) and finds
  // its registration, once per process, whichever module made it. The layout's version is in
  // it: a later libsection with another layout registers its own.
  static char const* name() {
    static char text[64];
    if (!text[0])
      snprintf(text, sizeof text, "libsection.dual_%s_%d_v1", sizeof(T) == 4 ? "float32" : "float64", W);
    return text;
  }
  // (value, tangent 0, ...): what indexing an array of duals from Python shows.
  static PyObject* getitem(void* data, void*) {
    D x;
    std::memcpy(&x, data, sizeof x);
    PyObject* out = PyTuple_New(W + 1);
    if (!out) return NULL;
    for (int i = 0; i <= W; ++i) {
      PyObject* item = PyFloat_FromDouble(i == 0 ? double(x.v) : double(x.d[i - 1]));
      if (!item) {
        Py_DECREF(out);
        return NULL;
      }
      PyTuple_SET_ITEM(out, i, item);
    }
    return out;
  }
  // A number: that value, no derivatives.
  static int setitem(PyObject* item, void* data, void*) {
    double const v = PyFloat_AsDouble(item);
    if (v == -1.0 && PyErr_Occurred()) return -1;
    D x(v);
    std::memcpy(data, &x, sizeof x);
    return 0;
  }
  static void swap_bytes(char* p) {
    for (std::size_t k = 0; k < sizeof(D); k += sizeof(T)) std::reverse(p + k, p + k + sizeof(T));
  }
  static void copyswap(void* dst, void* src, int swap, void*) {
    if (src) std::memmove(dst, src, sizeof(D));
    if (swap) swap_bytes((char*)dst);
  }
  static void copyswapn(void* dst, npy_intp ds, void* src, npy_intp ss, npy_intp n, int swap, void*) {
    char* d = (char*)dst;
    char* s = (char*)src;
    for (npy_intp i = 0; i < n; ++i, d += ds) {
      if (s) {
        std::memmove(d, s, sizeof(D));
        s += ss;
      }
      if (swap) swap_bytes(d);
    }
  }
  static npy_bool nonzero(void* data, void*) {
    D x;
    std::memcpy(&x, data, sizeof x);
    return x.v != 0;
  }
  // float64 and float32 arrays become duals of their values (no derivatives), so the op's
  // `PyArray_FROM_OTF(x, TYPENUM_INPUT_0, ...)` of a plain array works; no cast leaves the
  // duals, which would drop their derivatives.
  template <class From>
  static void from_plain(void* in, void* out, npy_intp n, void*, void*) {
    From const* src = (From const*)in;
    D* dst = (D*)out;
    for (npy_intp i = 0; i < n; ++i) dst[i] = D(src[i]);
  }
  static int find() {
    for (int i = 0; i < NPY_NUMUSERTYPES; ++i) {
      PyArray_Descr* descr = PyArray_DescrFromType(NPY_USERDEF + i);
      if (!descr) return -1;
      bool const same = std::strcmp(descr->typeobj->tp_name, name()) == 0;
      Py_DECREF(descr);
      if (same) return NPY_USERDEF + i;
    }
    return NPY_NOTYPE;
  }
  static int add() {
    static PyArray_ArrFuncs funcs;
    PyArray_InitArrFuncs(&funcs);
    funcs.getitem = getitem;
    funcs.setitem = setitem;
    funcs.copyswap = copyswap;
    funcs.copyswapn = copyswapn;
    funcs.nonzero = nonzero;
    PyType_Slot slots[] = {{Py_tp_doc, (void*)"libsection's dual number (value, derivatives)"}, {0, NULL}};
    PyType_Spec spec = {name(), 0, 0, Py_TPFLAGS_DEFAULT, slots};
    PyObject* bases = PyTuple_Pack(1, (PyObject*)&PyGenericArrType_Type);
    PyObject* scalar = bases ? PyType_FromSpecWithBases(&spec, bases) : NULL;
    Py_XDECREF(bases);
    if (!scalar) return -1;
#if NPY_ABI_VERSION >= 0x02000000
    static PyArray_DescrProto proto;
#else
    static PyArray_Descr proto;
#endif
    std::memset(&proto, 0, sizeof proto);
    Py_SET_TYPE((PyObject*)&proto, &PyArrayDescr_Type);
    Py_SET_REFCNT((PyObject*)&proto, 1);
    proto.typeobj = (PyTypeObject*)scalar;  // kept for the process, as the dtype is
    proto.kind = 'V';
    proto.type = 'V';
    proto.byteorder = '=';
    proto.flags = NPY_USE_GETITEM | NPY_USE_SETITEM;
    proto.elsize = sizeof(D);
    proto.alignment = alignof(D);
    proto.f = &funcs;
    int const number = PyArray_RegisterDataType(&proto);
    if (number < 0) return -1;
    PyArray_Descr* f64 = PyArray_DescrFromType(NPY_FLOAT64);
    PyArray_Descr* f32 = PyArray_DescrFromType(NPY_FLOAT32);
    int failed = !f64 || !f32 ||
                 PyArray_RegisterCastFunc(f64, number, from_plain<npy_float64>) < 0 ||
                 PyArray_RegisterCastFunc(f32, number, from_plain<npy_float32>) < 0 ||
                 PyArray_RegisterCanCast(f64, number, NPY_NOSCALAR) < 0 ||
                 PyArray_RegisterCanCast(f32, number, NPY_NOSCALAR) < 0;
    Py_XDECREF(f64);
    Py_XDECREF(f32);
    return failed ? -1 : number;
  }
  // The dtype's type number, registered on first use; -1 (NPY_NOTYPE) with an exception.
  static int typenum() {
    static int number = NPY_NOTYPE;
    if (number == NPY_NOTYPE) {
      number = find();
      if (number == NPY_NOTYPE && !PyErr_Occurred()) number = add();
      if (number < 0) number = NPY_NOTYPE;
    }
    return number;
  }
};

// ---- the driver of a differentiated module ---------------------------------------------------

// The tangents of one input carrying derivatives: lane l of element k at first + k*step + l*lane.
struct tangent_block {
  char* first;
  npy_intp count, step, lane;
  bool single;  // float32 tangents
};

template <int W>
class derivative {
 public:
  derivative() = default;
  derivative(derivative const&) = delete;
  derivative& operator=(derivative const&) = delete;
  ~derivative() {
    for (PyObject** p : owned_) Py_XDECREF(*p);
    for (PyObject* o : held_) Py_DECREF(o);
  }
  // An array the op's code may replace (its outputs): released at the end, whatever it is then.
  template <class P>
  void own(P** p) { owned_.push_back((PyObject**)p); }

  // A new C-contiguous array of duals holding `plain`'s values, no derivatives yet; NULL with
  // an exception.
  template <class D>
  PyArrayObject* dual_array(PyArrayObject* plain) {
    PyObject* values = held(PyArray_FROMANY((PyObject*)plain, NPY_FLOAT64, 0, 0, NPY_ARRAY_CARRAY_RO));
    int const typenum = dual_dtype<D>::typenum();
    if (!values || typenum == NPY_NOTYPE) return NULL;
    PyArrayObject* out = (PyArrayObject*)PyArray_EMPTY(PyArray_NDIM(plain), PyArray_DIMS(plain), typenum, 0);
    if (!out) return NULL;
    double const* v = (double const*)PyArray_DATA((PyArrayObject*)values);
    D* x = (D*)PyArray_DATA(out);
    npy_intp const n = PyArray_SIZE(out);
    for (npy_intp k = 0; k < n; ++k) x[k] = D(v[k]);
    add_block<D>(x, n);
    return out;
  }
  template <class D>
  void dual_scalar(D& x, double value) {
    x = D(value);
    add_block<D>(&x, 1);
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
    PyArrayObject* values = cotangent_values(cotangent);
    if (!values || check_output<D>(out, values, what)) return -1;
    double const* g = (double const*)PyArray_DATA(values);
    npy_intp const n = PyArray_SIZE(out);
    if (PyArray_IS_C_CONTIGUOUS(out)) {
      D const* y = (D const*)PyArray_DATA(out);
      for (npy_intp e = 0; e < n; ++e) add_lanes(g[e], y[e]);
      return 0;
    }
    PyObject* copy = held(PyArray_NewCopy(out, NPY_CORDER));
    if (!copy) return -1;
    D const* y = (D const*)PyArray_DATA((PyArrayObject*)copy);
    for (npy_intp e = 0; e < n; ++e) add_lanes(g[e], y[e]);
    return 0;
  }
  template <class D>
  void contract(D const& out, double cotangent) { add_lanes(cotangent, out); }
  // This pass's values of `out` against the op's own module's (`expected`): the same code on
  // the same values, so they differ only where the code reads or writes the duals as something
  // else (a memcpy of n * sizeof(double), a stride divided by sizeof(double)), which would make
  // the derivatives wrong too; -1 with an exception saying so.
  template <class D>
  int check_values(PyArrayObject* out, PyObject* expected, char const* what) {
    PyArrayObject* values = cotangent_values(expected);
    if (!values || check_output<D>(out, values, what)) return -1;
    PyArrayObject* c = out;
    if (!PyArray_IS_C_CONTIGUOUS(out) && !(c = (PyArrayObject*)held(PyArray_NewCopy(out, NPY_CORDER))))
      return -1;
    double const* e = (double const*)PyArray_DATA(values);
    D const* y = (D const*)PyArray_DATA(c);
    npy_intp const n = PyArray_SIZE(out);
    for (npy_intp k = 0; k < n; ++k)
      if (!same_value((double)y[k].v, e[k])) return values_differ(what, k, (double)y[k].v, e[k]);
    return 0;
  }
  template <class D>
  int check_values(D const& out, double expected, char const* what) {
    return same_value((double)out.v, expected) ? 0 : values_differ(what, 0, (double)out.v, expected);
  }
  // The gradient of input block `b`, shaped and typed as `like` (the input): into `*into`.
  int gradient(PyArrayObject** into, PyArrayObject* like, int b) {
    PyArrayObject* out = (PyArrayObject*)PyArray_EMPTY(PyArray_NDIM(like), PyArray_DIMS(like), PyArray_TYPE(like), 0);
    if (!out) return -1;
    Py_XDECREF(*into);
    *into = out;
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

  // ---- pushforward (W == 1): the given tangents, one pass
  int tangent(int b, PyObject* given) {
    PyArrayObject* values = cotangent_values(given);
    if (!values) return -1;
    if (PyArray_SIZE(values) != blocks_[b].count) {
      PyErr_Format(PyExc_ValueError, "the tangent of a differentiated input has %ld elements, the input %ld",
                   (long)PyArray_SIZE(values), (long)blocks_[b].count);
      return -1;
    }
    double const* t = (double const*)PyArray_DATA(values);
    for (npy_intp k = 0; k < blocks_[b].count; ++k) set(blocks_[b], k, 0, t[k]);
    return 0;
  }
  void tangent(int b, double given) { set(blocks_[b], 0, 0, given); }
  // The tangents of output `out` (lane 0), as a new array of its scalar type into `*into`.
  template <class D>
  int output_tangent(PyArrayObject* out, PyArrayObject** into, char const* what) {
    if (check_output<D>(out, NULL, what)) return -1;
    int const typenum = sizeof(typename D::scalar) == 4 ? NPY_FLOAT32 : NPY_FLOAT64;
    PyArrayObject* made = (PyArrayObject*)PyArray_EMPTY(PyArray_NDIM(out), PyArray_DIMS(out), typenum, 0);
    if (!made) return -1;
    Py_XDECREF(*into);
    *into = made;
    PyObject* copy = held(PyArray_NewCopy(out, NPY_CORDER));
    if (!copy) return -1;
    D const* y = (D const*)PyArray_DATA((PyArrayObject*)copy);
    npy_intp const n = PyArray_SIZE(out);
    for (npy_intp e = 0; e < n; ++e) {
      if (typenum == NPY_FLOAT32) ((npy_float32*)PyArray_DATA(made))[e] = (npy_float32)y[e].d[0];
      else ((npy_float64*)PyArray_DATA(made))[e] = (npy_float64)y[e].d[0];
    }
    return 0;
  }

 private:
  PyObject* held(PyObject* o) {
    if (o) held_.push_back(o);
    return o;
  }
  template <class D>
  void add_block(D* x, npy_intp n) {
    tangent_block b = {(char*)x->d, n, (npy_intp)sizeof(D), (npy_intp)sizeof(x->v), sizeof(x->v) == 4};
    blocks_.push_back(b);
    offsets_.push_back(total_);
    total_ += n;
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
      while (offsets_[b] + blocks_[b].count <= g) ++b;
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
  // Equal, both NaN, or apart by rounding (a compiler contracting a*b+c differently): relative
  // to the op's own value, so a huge wrong value (garbage read as a double) is not "close".
  static bool same_value(double got, double expected) {
    if (got == expected || (std::isnan(got) && std::isnan(expected))) return true;
    double const gap = std::fabs(got - expected);
    return gap <= 1e-6 * std::fabs(expected) || gap <= 1e-12;
  }
  static int values_differ(char const* what, npy_intp k, double got, double expected) {
    char g[32], e[32];
    std::snprintf(g, sizeof g, "%.17g", got);
    std::snprintf(e, sizeof e, "%.17g", expected);
    PyErr_Format(PyExc_ValueError,
                 "%s: its gradient is derived by running its C code on dual numbers, and there element %ld "
                 "of its value is %s where the op's own module computes %s. The code reads or writes the "
                 "values of a float input or output as something other than its DTYPE macro: a memcpy of "
                 "n * sizeof(double) (write n * sizeof(DTYPE_INPUT_0), or PyArray_NBYTES), a stride divided "
                 "by sizeof(double) (divide by PyArray_ITEMSIZE), a cast to a plain floating type. The "
                 "derived gradient would be wrong, so it is refused; or give the op a pullback of its own",
                 what, (long)k, g, e);
    return -1;
  }
  PyArrayObject* cotangent_values(PyObject* given) {
    return (PyArrayObject*)held(PyArray_FROMANY(given, NPY_FLOAT64, 0, 0, NPY_ARRAY_CARRAY_RO));
  }
  // The op's output: an array of duals (so made with TYPENUM_OUTPUT_i) of the cotangent's shape.
  template <class D>
  int check_output(PyArrayObject* out, PyArrayObject* like, char const* what) {
    if (!out) {
      PyErr_Format(PyExc_ValueError, "%s is NULL after the op's code ran", what);
      return -1;
    }
    if (PyArray_TYPE(out) != dual_dtype<D>::typenum()) {
      PyObject* got = PyObject_Str((PyObject*)PyArray_DESCR(out));
      PyErr_Format(PyExc_TypeError,
                   "%s is an array of %s, not of the op's DTYPE_OUTPUT: its gradient is derived by running its C code "
                   "on dual numbers, so it must make its outputs with their TYPENUM_OUTPUT_i "
                   "(PyArray_EMPTY(nd, dims, TYPENUM_OUTPUT_0, 0)), not a fixed NPY_ type",
                   what, got ? PyUnicode_AsUTF8(got) : "?");
      Py_XDECREF(got);
      return -1;
    }
    if (like && !PyArray_SAMESHAPE(out, like)) {
      PyErr_Format(PyExc_ValueError, "%s has %ld elements in %d dimensions, its cotangent %ld in %d", what,
                   (long)PyArray_SIZE(out), PyArray_NDIM(out), (long)PyArray_SIZE(like), PyArray_NDIM(like));
      return -1;
    }
    return 0;
  }

  std::vector<tangent_block> blocks_;
  std::vector<npy_intp> offsets_;
  npy_intp total_ = 0, pass_begin_ = 0;
  bool started_ = false;
  std::vector<double> acc_;
  std::vector<PyObject**> owned_;
  std::vector<PyObject*> held_;
};

}  // namespace libsection

// `std::exp(x)` and the other qualified calls reach the duals' overloads too.
namespace std {
using libsection::exp; using libsection::exp2; using libsection::expm1; using libsection::log;
using libsection::log2; using libsection::log10; using libsection::log1p; using libsection::sqrt;
using libsection::cbrt; using libsection::sin; using libsection::cos; using libsection::tan;
using libsection::asin; using libsection::acos; using libsection::atan; using libsection::sinh;
using libsection::cosh; using libsection::tanh; using libsection::asinh; using libsection::acosh;
using libsection::atanh; using libsection::erf; using libsection::erfc; using libsection::lgamma;
using libsection::tgamma; using libsection::fabs; using libsection::abs; using libsection::floor;
using libsection::ceil; using libsection::round; using libsection::trunc; using libsection::rint;
using libsection::nearbyint; using libsection::lround; using libsection::lrint; using libsection::isnan;
using libsection::isinf; using libsection::isfinite; using libsection::isnormal; using libsection::signbit;
using libsection::ldexp; using libsection::pow; using libsection::atan2; using libsection::hypot;
using libsection::fmax; using libsection::fmin; using libsection::fmod; using libsection::copysign;
using libsection::fdim; using libsection::max; using libsection::min; using libsection::fma;
}  // namespace std
#endif
