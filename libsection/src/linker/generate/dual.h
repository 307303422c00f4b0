// clang-format off
// The element type of forward mode (generate/derivative.cpp): a dual number, a value and W
// tangents (partial derivatives), which the op's own C code computes with when its
// `DTYPE_INPUT_i`/`DTYPE_OUTPUT_i` name it. Arithmetic, comparisons (on the value) and the C
// math functions (derivative_rules.h) carry the tangents along; nothing converts a dual to a
// plain `double`, so a value hidden in one is a compile error (build/compile_hints.cpp tells it
// in the op's terms), never a derivative silently lost. Integer conversions (`(int)x`, an
// index) are explicit.
//
// Through the math functions a tangent that is zero stays zero whatever the slope: one lane's
// infinite slope (sqrt at 0) must not make 0 * inf = NaN of the other lanes' derivatives.
//
// C++ only: a differentiated module is compiled as C++ whatever the op is declared. Embedded
// at build time (libsection/embed.cmake), these notes left out.
#ifndef LIBSECTION_DUAL_H
#define LIBSECTION_DUAL_H

namespace libsection {

template <class T, int W>
struct dual {
  static_assert(std::is_floating_point<T>::value, "a dual's scalar is a floating type");
  typedef T scalar;
  T v;
  T d[W];
  dual() = default;
  template <class A, if_plain<A> = 0>
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
template <class T, int W> struct is_number<dual<T, W>> : std::true_type {};

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
// The same for the math functions, whose slope may be infinite (sqrt at 0): there a zero
// tangent stays zero. Arithmetic keeps the plain products above: a compiler contracting
// `a * b + c` into one instruction (-ffp-contract=fast, PyTensor's flags) decides by the code
// around it, and the values of the duals must stay those of the op's own module.
template <class T, class U>
inline T scaled_tangent(T slope, U t) { return t == 0 ? T(0) : slope * T(t); }
template <class T, class U, int W>
inline dual<T, W> slope_chain(dual<U, W> const& a, T value, T slope) {
  dual<T, W> r;
  r.v = value;
  for (int i = 0; i < W; ++i) r.d[i] = scaled_tangent(slope, a.d[i]);
  return r;
}
template <class T, class U, class V, int W>
inline dual<T, W> slope_chain2(dual<U, W> const& a, dual<V, W> const& b, T value, T sa, T sb) {
  dual<T, W> r;
  r.v = value;
  for (int i = 0; i < W; ++i) r.d[i] = scaled_tangent(sa, a.d[i]) + scaled_tangent(sb, b.d[i]);
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
template <class T, int W, class A, if_plain<A> = 0>
inline dual<mixed<T, A>, W> operator+(dual<T, W> const& a, A b) {
  return chain(a, mixed<T, A>(a.v + b), mixed<T, A>(1));
}
template <class T, int W, class A, if_plain<A> = 0>
inline dual<mixed<T, A>, W> operator+(A b, dual<T, W> const& a) {
  return chain(a, mixed<T, A>(b + a.v), mixed<T, A>(1));
}
template <class T, int W, class A, if_plain<A> = 0>
inline dual<mixed<T, A>, W> operator-(dual<T, W> const& a, A b) {
  return chain(a, mixed<T, A>(a.v - b), mixed<T, A>(1));
}
template <class T, int W, class A, if_plain<A> = 0>
inline dual<mixed<T, A>, W> operator-(A b, dual<T, W> const& a) {
  return chain(a, mixed<T, A>(b - a.v), mixed<T, A>(-1));
}
template <class T, int W, class A, if_plain<A> = 0>
inline dual<mixed<T, A>, W> operator*(dual<T, W> const& a, A b) {
  return chain(a, mixed<T, A>(a.v * b), mixed<T, A>(b));
}
template <class T, int W, class A, if_plain<A> = 0>
inline dual<mixed<T, A>, W> operator*(A b, dual<T, W> const& a) {
  return chain(a, mixed<T, A>(b * a.v), mixed<T, A>(b));
}
template <class T, int W, class A, if_plain<A> = 0>
inline dual<mixed<T, A>, W> operator/(dual<T, W> const& a, A b) {
  typedef mixed<T, A> R;
  return chain(a, R(a.v / b), R(1) / R(b));
}
template <class T, int W, class A, if_plain<A> = 0>
inline dual<mixed<T, A>, W> operator/(A b, dual<T, W> const& a) {
  typedef mixed<T, A> R;
  R const q = R(b) / R(a.v);
  return chain(a, q, -q / R(a.v));
}

// The math functions of derivative_rules.h on duals.
#define LIBSECTION_DUAL_UNARY(name, value, slope)                         \
  template <class T, int W> inline dual<T, W> name(dual<T, W> const& a) { \
    T const x = a.v;                                                      \
    T const y = value;                                                    \
    return slope_chain(a, y, T(slope));                                   \
  }
LIBSECTION_UNARY_RULES(LIBSECTION_DUAL_UNARY)
#undef LIBSECTION_DUAL_UNARY

// Each binary function for (dual, dual), (dual, number) and (number, dual).
#define LIBSECTION_DUAL_BINARY(name, value, dx, dy)                                         \
  template <class T, class U, int W>                                                        \
  inline dual<std::common_type_t<T, U>, W> name(dual<T, W> const& a, dual<U, W> const& b) { \
    typedef std::common_type_t<T, U> R;                                                     \
    R const x = a.v, y = b.v, z = value;                                                    \
    return slope_chain2(a, b, z, R(dx), R(dy));                                             \
  }                                                                                         \
  template <class T, int W, class A, if_plain<A> = 0>                                       \
  inline dual<mixed<T, A>, W> name(dual<T, W> const& a, A bv) {                             \
    typedef mixed<T, A> R;                                                                  \
    R const x = a.v, y = R(bv), z = value;                                                  \
    (void)y;                                                                                \
    return slope_chain(a, z, R(dx));                                                        \
  }                                                                                         \
  template <class T, int W, class A, if_plain<A> = 0>                                       \
  inline dual<mixed<T, A>, W> name(A av, dual<T, W> const& b) {                             \
    typedef mixed<T, A> R;                                                                  \
    R const x = R(av), y = b.v, z = value;                                                  \
    (void)x;                                                                                \
    return slope_chain(b, z, R(dy));                                                        \
  }
LIBSECTION_BINARY_RULES(LIBSECTION_DUAL_BINARY)
#undef LIBSECTION_DUAL_BINARY

}  // namespace libsection

LIBSECTION_STD_NAMES
#endif
