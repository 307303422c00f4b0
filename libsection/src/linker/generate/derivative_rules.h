// clang-format off
// The derivative rules of C's math functions, written once for the element types of a
// differentiated module (generate/derivative.cpp): the dual number of forward mode (dual.h)
// and the taped number of reverse mode (tape.h). Each rule gives a function's value and its
// derivatives as expressions of its arguments `x` (and `y`), its value `y` (unary) or `z`
// (binary) and the scalar type `T` (unary) or `R` (binary); each number type turns the lists
// into its overloads. What does not depend on the type is here too: the digamma function,
// comparisons and classifications on the value, min, max and fma, and the names the numbers'
// overloads add to namespace std.
//
// C++ only. Embedded at build time (libsection/embed.cmake), these notes left out.
#ifndef LIBSECTION_DERIVATIVE_RULES_H
#define LIBSECTION_DERIVATIVE_RULES_H
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

namespace libsection {

// Whether X is one of the numbers here (each number's header says so of its own).
template <class X> struct is_number : std::false_type {};
template <class A> using if_plain = std::enable_if_t<std::is_arithmetic<A>::value, int>;
// A number's scalar with a plain number: C's usual conversions (float with double is double).
template <class T, class A>
using mixed = std::conditional_t<std::is_floating_point<A>::value, std::common_type_t<T, A>, T>;
template <class X, class Y>
using if_number_pair = std::enable_if_t<(is_number<X>::value || is_number<Y>::value) &&
                                        (is_number<X>::value || std::is_arithmetic<X>::value) &&
                                        (is_number<Y>::value || std::is_arithmetic<Y>::value), int>;
template <class X> using if_a_number = std::enable_if_t<is_number<X>::value, int>;

// The value of a number, or the plain number itself.
template <class X, std::enable_if_t<!is_number<X>::value, int> = 0>
inline X value_of(X const& x) { return x; }
template <class X, if_a_number<X> = 0>
inline auto value_of(X const& x) -> decltype(x.v) { return x.v; }

// Comparisons look at the values only, as the branches of the op's code do.
#define LIBSECTION_COMPARE(op)                                      \
  template <class X, class Y, if_number_pair<X, Y> = 0>             \
  inline bool operator op(X const& a, Y const& b) { return value_of(a) op value_of(b); }
LIBSECTION_COMPARE(==)
LIBSECTION_COMPARE(!=)
LIBSECTION_COMPARE(<)
LIBSECTION_COMPARE(<=)
LIBSECTION_COMPARE(>)
LIBSECTION_COMPARE(>=)
#undef LIBSECTION_COMPARE

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

// F(name, value, slope): functions of one argument, their value at `x` and derivative there:
// the smooth ones, |x| and the steps (taped numbers record the last two differently).
#define LIBSECTION_SMOOTH_RULES(F)                                                  \
  F(exp, std::exp(x), y)                                                            \
  F(exp2, std::exp2(x), y * T(0.693147180559945309417))                             \
  F(expm1, std::expm1(x), std::exp(x))                                              \
  F(log, std::log(x), T(1) / x)                                                     \
  F(log2, std::log2(x), T(1) / (x * T(0.693147180559945309417)))                    \
  F(log10, std::log10(x), T(1) / (x * T(2.30258509299404568402)))                   \
  F(log1p, std::log1p(x), T(1) / (T(1) + x))                                        \
  F(sqrt, std::sqrt(x), T(0.5) / y)                                                 \
  F(cbrt, std::cbrt(x), T(1) / (T(3) * y * y))                                      \
  F(sin, std::sin(x), std::cos(x))                                                  \
  F(cos, std::cos(x), -std::sin(x))                                                 \
  F(tan, std::tan(x), T(1) + y * y)                                                 \
  F(asin, std::asin(x), T(1) / std::sqrt(T(1) - x * x))                             \
  F(acos, std::acos(x), T(-1) / std::sqrt(T(1) - x * x))                            \
  F(atan, std::atan(x), T(1) / (T(1) + x * x))                                      \
  F(sinh, std::sinh(x), std::cosh(x))                                               \
  F(cosh, std::cosh(x), std::sinh(x))                                               \
  F(tanh, std::tanh(x), T(1) - y * y)                                               \
  F(asinh, std::asinh(x), T(1) / std::sqrt(x * x + T(1)))                           \
  F(acosh, std::acosh(x), T(1) / std::sqrt(x * x - T(1)))                           \
  F(atanh, std::atanh(x), T(1) / (T(1) - x * x))                                    \
  F(erf, std::erf(x), T(1.12837916709551257390) * std::exp(-x * x))                 \
  F(erfc, std::erfc(x), T(-1.12837916709551257390) * std::exp(-x * x))              \
  F(lgamma, std::lgamma(x), T(digamma(x)))                                          \
  F(tgamma, std::tgamma(x), y * T(digamma(x)))                                      \
  /* NumPy's npy_math functions that are functions, not macros for the C names. */  \
  F(npy_sin, std::sin(x), std::cos(x))                                              \
  F(npy_cos, std::cos(x), -std::sin(x))                                             \
  F(npy_tan, std::tan(x), T(1) + y * y)                                             \
  F(npy_log2, std::log2(x), T(1) / (x * T(0.693147180559945309417)))
// |x|: the sign of x, 0 at 0 (as JAX and PyTensor take it).
#define LIBSECTION_SIGN_RULES(F)                                                    \
  F(fabs, std::fabs(x), x > 0 ? T(1) : x < 0 ? T(-1) : T(0))                        \
  F(abs, std::fabs(x), x > 0 ? T(1) : x < 0 ? T(-1) : T(0))
// Steps: zero derivative almost everywhere.
#define LIBSECTION_STEP_RULES(F)                                                    \
  F(floor, std::floor(x), T(0))                                                     \
  F(ceil, std::ceil(x), T(0))                                                       \
  F(round, std::round(x), T(0))                                                     \
  F(trunc, std::trunc(x), T(0))                                                     \
  F(rint, std::rint(x), T(0))                                                       \
  F(nearbyint, std::nearbyint(x), T(0))
// All of them (the dual number's overloads, each rule alike).
#define LIBSECTION_UNARY_RULES(F) \
  LIBSECTION_SMOOTH_RULES(F) LIBSECTION_SIGN_RULES(F) LIBSECTION_STEP_RULES(F)

// F(name, value, dx, dy): functions of two arguments, their value at (x, y) and their partial
// derivatives there.
#define LIBSECTION_BINARY_RULES(F)                                                              \
  /* x**y: y x**(y-1) (0 for y == 0, as x**0 is 1 everywhere) and x**y log x (0 where x**y is) */ \
  F(pow, std::pow(x, y), y == 0 ? R(0) : y * std::pow(x, y - 1), z == 0 ? R(0) : z * std::log(x)) \
  F(atan2, std::atan2(x, y), y / (x * x + y * y), -x / (x * x + y * y))                         \
  F(npy_atan2, std::atan2(x, y), y / (x * x + y * y), -x / (x * x + y * y))                     \
  F(hypot, std::hypot(x, y), z == 0 ? R(0) : x / z, z == 0 ? R(0) : y / z)                      \
  F(npy_hypot, std::hypot(x, y), z == 0 ? R(0) : x / z, z == 0 ? R(0) : y / z)                  \
  /* The one chosen, as fmax and fmin choose (a NaN loses). */                                  \
  F(fmax, std::fmax(x, y), (x >= y || std::isnan(y)) ? R(1) : R(0),                             \
    (x >= y || std::isnan(y)) ? R(0) : R(1))                                                    \
  F(fmin, std::fmin(x, y), (x <= y || std::isnan(y)) ? R(1) : R(0),                             \
    (x <= y || std::isnan(y)) ? R(0) : R(1))                                                    \
  F(fmod, std::fmod(x, y), R(1), -std::trunc(x / y))                                            \
  F(copysign, std::copysign(x, y), std::signbit(x) == std::signbit(y) ? R(1) : R(-1), R(0))     \
  F(fdim, std::fdim(x, y), x > y ? R(1) : R(0), x > y ? R(-1) : R(0))

// Classifications and roundings to integers look at the value.
#define LIBSECTION_VALUE_TEST(name, type)                          \
  template <class X, if_a_number<X> = 0>                           \
  inline type name(X const& a) { return std::name(a.v); }
LIBSECTION_VALUE_TEST(lround, long)
LIBSECTION_VALUE_TEST(lrint, long)
LIBSECTION_VALUE_TEST(isnan, bool)
LIBSECTION_VALUE_TEST(isinf, bool)
LIBSECTION_VALUE_TEST(isfinite, bool)
LIBSECTION_VALUE_TEST(isnormal, bool)
LIBSECTION_VALUE_TEST(signbit, bool)
#undef LIBSECTION_VALUE_TEST
template <class X, if_a_number<X> = 0>
inline X ldexp(X const& a, int e) { return a * std::ldexp(decltype(a.v)(1), e); }

// min and max as std::min and std::max choose (the first on a tie), a number with a plain one too.
template <class X, class Y, if_number_pair<X, Y> = 0>
inline auto max(X const& a, Y const& b) -> decltype(a + b) {
  typedef decltype(a + b) R;
  return value_of(a) < value_of(b) ? R(b) : R(a);
}
template <class X, class Y, if_number_pair<X, Y> = 0>
inline auto min(X const& a, Y const& b) -> decltype(a + b) {
  typedef decltype(a + b) R;
  return value_of(b) < value_of(a) ? R(b) : R(a);
}
template <class X, class Y, class Z,
          std::enable_if_t<is_number<X>::value || is_number<Y>::value || is_number<Z>::value, int> = 0>
inline auto fma(X const& a, Y const& b, Z const& c) -> decltype(a * b + c) {
  return a * b + c;
}

}  // namespace libsection

// `std::exp(x)` and the other qualified calls reach the numbers' overloads too: each number's
// header ends with these, after its overloads (a using-declaration brings in those declared
// before it).
#define LIBSECTION_USING_NAME(name, ...) using libsection::name;
#define LIBSECTION_STD_NAMES                                                                  \
  namespace std {                                                                             \
  LIBSECTION_UNARY_RULES(LIBSECTION_USING_NAME)                                               \
  LIBSECTION_BINARY_RULES(LIBSECTION_USING_NAME)                                              \
  using libsection::lround; using libsection::lrint; using libsection::isnan;                 \
  using libsection::isinf; using libsection::isfinite; using libsection::isnormal;            \
  using libsection::signbit; using libsection::ldexp; using libsection::max;                  \
  using libsection::min; using libsection::fma;                                               \
  }
#endif
