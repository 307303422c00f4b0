// Unit tests of the numbers a differentiated module computes with, which need no Python: the
// dual numbers of forward mode (generate/dual.h) and the taped numbers of reverse mode
// (generate/tape.h), their derivative rules (generate/derivative_rules.h), the tape's sweep,
// its limit and its check of numbers from an earlier pass.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "linker/generate/derivative_rules.h"
#include "linker/generate/dual.h"
#include "linker/generate/tape.h"

namespace {

using libsection::active;
using libsection::dual;
using libsection::tape;
using libsection::tape_scope;
typedef dual<double, 4> d4;
typedef active<double> a64;

double const inf = std::numeric_limits<double>::infinity();

/// Four duals seeded with the unit tangents of four scalars (one pass of width 4).
std::vector<d4> seeded(std::vector<double> const& values) {
  std::vector<d4> x(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    x[i] = d4(values[i]);
    x[i].d[i] = 1;
  }
  return x;
}

/// The gradient of `f` (a function of a vector of taped numbers to one) at `values`, by one
/// taped pass and its sweep.
template <class F>
std::vector<double> taped_gradient(tape& t, std::vector<double> const& values, F f) {
  t.begin(std::size_t(1) << 24);
  tape_scope scope(t);
  std::vector<a64> x(values.size());
  std::vector<std::size_t> places;
  for (std::size_t i = 0; i < values.size(); ++i) {
    x[i] = a64(values[i]);
    x[i].id = t.independent();
    places.push_back(t.position(x[i].id));
  }
  a64 const y = f(x);
  std::vector<double> adjoint(t.size(), 0.0);
  libsection::seed(t, adjoint.data(), y, 1.0);
  t.sweep(adjoint.data());
  std::vector<double> out;
  for (auto p : places) out.push_back(adjoint[p]);
  return out;
}

template <class X>
X sum_of_roots(std::vector<X> const& x) {
  X s = 0;
  for (auto const& v : x) s += std::sqrt(v);
  return s;
}

bool same(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b)) || std::fabs(a - b) <= 1e-12 * std::fabs(b);
}

}  // namespace

TEST_SUITE("numbers") {
  TEST_CASE("an infinite slope leaves the other scalars' derivatives alone, in both modes") {
    std::vector<double> const x = {0, 1, 4, 9};
    d4 const forward = sum_of_roots(seeded(x));
    CHECK(forward.d[0] == inf);
    CHECK(forward.d[1] == 0.5);
    CHECK(forward.d[2] == 0.25);
    CHECK(forward.d[3] == doctest::Approx(1.0 / 6));
    tape t;
    auto const reverse = taped_gradient(t, x, [](auto const& v) { return sum_of_roots(v); });
    CHECK(reverse == std::vector<double>{inf, 0.5, 0.25, 1.0 / 6});
    // pow(0, .5), cbrt(0), asin(1), atan2(0, 0): the one element's slope, the others' intact.
    auto const edges = [](auto const& v) {
      return std::pow(v[0], 0.5) + std::cbrt(v[1] - 1) + std::asin(v[2] - 3) +
             std::atan2(v[3] - 9, v[3] - 9) + v[0] + v[1] + v[2] + v[3];
    };
    d4 const f = edges(seeded(x));
    CHECK(f.d[0] == inf);
    CHECK(f.d[1] == inf);
    CHECK(f.d[2] == inf);
    CHECK(std::isnan(f.d[3]));  // atan2 at (0, 0) has no derivative
    auto const r = taped_gradient(t, x, edges);
    CHECK(r[0] == inf);
    CHECK(r[1] == inf);
    CHECK(r[2] == inf);
    CHECK(std::isnan(r[3]));
    // Only the lanes of that element: a sum with a finite function of the others stays finite.
    auto const mixed = [](auto const& v) { return std::sqrt(v[0]) + v[1] * v[2] * v[3]; };
    d4 const m = mixed(seeded(x));
    CHECK(m.d[0] == inf);
    CHECK(m.d[1] == 36);
    CHECK(taped_gradient(t, x, mixed) == std::vector<double>{inf, 36, 9, 4});
    // An infinite partial whose result's adjoint is zero (the branch not taken) passes nothing.
    auto const unused = [](auto const& v) { return std::max(std::sqrt(v[0]), 5.0) + v[1]; };
    CHECK(unused(seeded(x)).d[0] == 0);
    CHECK(taped_gradient(t, x, unused) == std::vector<double>{0, 1, 0, 0});
    // Along one number's chain (which records no entry, its slopes multiplied as it goes) a
    // zero slope after an infinite one is 0 * inf, as the chain rule, forward mode and JAX have it.
    auto const flat = [](auto const& v) { return std::cos(std::sqrt(v[0])) + v[1]; };
    CHECK(std::isnan(flat(seeded(x)).d[0]));
    auto const f0 = taped_gradient(t, x, flat);
    CHECK(std::isnan(f0[0]));
    CHECK(f0[1] == 1);
  }

  TEST_CASE("each math function's derivative is the same taped as on dual numbers") {
    tape t;
    for (double const at : {0.3, -0.7, 1.6, 2.5}) {
#define LIBSECTION_CHECK_UNARY(name, ...)                                                         \
  {                                                                                               \
    dual<double, 1> a(at);                                                                        \
    a.d[0] = 1;                                                                                   \
    double const slope = libsection::name(a).d[0];                                                \
    auto const g = taped_gradient(t, {at}, [](auto const& v) { return libsection::name(v[0]); }); \
    INFO(#name " at " << at);                                                                     \
    CHECK(same(g[0], slope));                                                                     \
  }
      LIBSECTION_UNARY_RULES(LIBSECTION_CHECK_UNARY)
#undef LIBSECTION_CHECK_UNARY
#define LIBSECTION_CHECK_BINARY(name, ...)                                                         \
  {                                                                                                \
    dual<double, 2> a(at), b(0.45);                                                                \
    a.d[0] = 1;                                                                                    \
    b.d[1] = 1;                                                                                    \
    auto const z = libsection::name(a, b);                                                         \
    auto const g =                                                                                 \
        taped_gradient(t, {at, 0.45}, [](auto const& v) { return libsection::name(v[0], v[1]); }); \
    INFO(#name " at " << at);                                                                      \
    CHECK(same(g[0], z.d[0]));                                                                     \
    CHECK(same(g[1], z.d[1]));                                                                     \
  }
      LIBSECTION_BINARY_RULES(LIBSECTION_CHECK_BINARY)
#undef LIBSECTION_CHECK_BINARY
    }
  }

  TEST_CASE("the tape records operations of two taped numbers; of one, or constants, nothing") {
    CHECK(sizeof(libsection::tape_entry) == 24);
    CHECK(tape::bytes_per_entry == 32);
    CHECK(sizeof(active<double>) == 24);
    CHECK(sizeof(active<float>) == 24);
    tape t;
    t.begin(1 << 20);
    tape_scope scope(t);
    a64 x(2.0), w(3.0);
    x.id = t.independent();
    w.id = t.independent();
    std::size_t const start = t.size();
    a64 const c = a64(3.0) * 4.0 + std::exp(a64(1.0));  // constants only: no entry
    CHECK(c.id == 0);
    CHECK(t.size() == start);
    a64 y = x + 1.0;  // the same derivative as x: no entry either
    CHECK(y.id == x.id);
    CHECK(y.slope == 1);
    y = std::exp(std::sin(x) * 3.0) - 1.0;  // a chain on x alone: x's place, the slopes multiplied
    CHECK(y.id == x.id);
    CHECK(y.slope == doctest::Approx(std::cos(2.0) * 3 * std::exp(3 * std::sin(2.0))));
    CHECK(t.size() == start);
    y = x * w;  // two taped numbers: an entry
    CHECK(t.size() == start + 1);
    CHECK(y.slope == 1);
    y += c;  // a constant added: no entry
    ++y;
    CHECK(t.size() == start + 1);
    y = std::sin(y) * x;
    CHECK(t.size() == start + 2);
    CHECK(y.v == doctest::Approx(std::sin(6.0 + c.v + 1) * 2));
    // float and double mix as C mixes them, on one tape.
    active<float> const f = active<float>(x) * 2.0f;
    CHECK(f.id == x.id);
    auto const m = f + y;
    static_assert(std::is_same<decltype(m), active<double> const>::value, "float with double");
    CHECK(t.size() == start + 3);
    // The gradient of that chain, as its sweep gives it.
    std::vector<double> const g = taped_gradient(t, {2.0, 3.0}, [](auto const& v) {
      return std::exp(std::sin(v[0]) * 3.0) * v[1] - v[0] * v[0] / v[1];
    });
    CHECK(same(g[0], std::cos(2.0) * 3 * std::exp(3 * std::sin(2.0)) * 3 - 4.0 / 3));
    CHECK(same(g[1], std::exp(3 * std::sin(2.0)) + 4.0 / 9));
  }

  TEST_CASE("fabs and the steps record nothing, their derivatives kept") {
    tape t;
    t.begin(1 << 20);
    tape_scope scope(t);
    a64 x(2.5);
    x.id = t.independent();
    std::size_t const start = t.size();
    a64 const same = std::fabs(x);  // positive: x itself, its place kept
    CHECK(same.id == x.id);
    CHECK(same.slope == 1);
    a64 const flipped = std::fabs(-x);  // -x, its sign flipped back: x's place, slope 1
    CHECK(flipped.id == x.id);
    CHECK(flipped.slope == 1);
    CHECK(flipped.v == 2.5);
    for (a64 const& step : {std::floor(x), std::ceil(x), std::round(x), std::trunc(x)}) {
      CHECK(step.id == 0);  // a constant: its derivative is zero
    }
    // The convergence test of an iteration (fabs(step) < tol) leaves the tape as it was.
    bool const small = std::fabs(x * 1e-13) < 1e-12;
    CHECK(small);
    CHECK(t.size() == start);
    std::vector<double> const g =
        taped_gradient(t, {-2.0, 3.0}, [](auto const& v) { return std::fabs(v[0]) * v[1]; });
    CHECK(g == std::vector<double>{-3.0, 2.0});
  }

  TEST_CASE("a number of an earlier pass marks the tape stale and adds nothing") {
    tape t;
    a64 kept;
    {
      t.begin(1 << 20);
      tape_scope scope(t);
      a64 x(1.5);
      x.id = t.independent();
      kept = x * x;  // a memo kept in a static variable
      CHECK_FALSE(t.stale());
    }
    t.begin(1 << 20);
    tape_scope scope(t);
    a64 x(1.5);
    x.id = t.independent();
    a64 const y = x * kept;  // the memo's id is of the last pass
    CHECK(t.stale());
    CHECK(y.v == doctest::Approx(1.5 * 2.25));
  }

  TEST_CASE("a tape stops recording at its limit, the values going on") {
    tape t;
    t.begin(100 * tape::bytes_per_entry);
    CHECK(t.max_entries() == 100);
    tape_scope scope(t);
    a64 x(1.0001), w(1.0);
    x.id = t.independent();
    w.id = t.independent();
    a64 y = x;
    for (int i = 0; i < 1000; ++i) y = y * w + x;  // two numbers each time: two entries
    CHECK(t.full());
    CHECK_FALSE(t.no_memory());
    CHECK(t.size() <= 100);
    CHECK(y.v == doctest::Approx(1001 * 1.0001));
    CHECK((x * w).id == 0);  // past the limit an operation's result is a constant
    // A new pass under a larger limit records again, its storage kept.
    t.begin(1 << 20);
    a64 z(2.0), u(3.0);
    z.id = t.independent();
    u.id = t.independent();
    CHECK((z * u).id != 0);
    CHECK_FALSE(t.full());
  }

  TEST_CASE("a sweep leaves the adjoints zero but the independent variables', for the next") {
    tape t;
    auto const pass = [&t](double x0, double x1) {
      t.begin(std::size_t(1) << 24);
      tape_scope scope(t);
      a64 x(x0), y(x1);
      x.id = t.independent();
      y.id = t.independent();
      a64 const z = std::sin(x * y) + std::exp(y) / x;
      double* adjoint = t.zeroed_adjoints();
      REQUIRE(adjoint != nullptr);
      for (std::size_t k = 0; k < t.size(); ++k) CHECK(adjoint[k] == 0);  // each sweep's start
      libsection::seed(t, adjoint, z, 1.0);
      CHECK(t.sweep(adjoint) == 2);
      std::vector<double> const gradient = {adjoint[t.position(x.id)], adjoint[t.position(y.id)]};
      for (std::size_t k = 0; k < t.size(); ++k)
        if (k != t.position(x.id) && k != t.position(y.id)) CHECK(adjoint[k] == 0);
      adjoint[t.position(x.id)] = adjoint[t.position(y.id)] = 0;
      t.cleared();
      return gradient;
    };
    for (double const x0 : {0.5, 2.0, 0.5}) {  // the second and third sweeps start on a cleared one
      double const x1 = 1.5;
      std::vector<double> const g = pass(x0, x1);
      CHECK(same(g[0], x1 * std::cos(x0 * x1) - std::exp(x1) / (x0 * x0)));
      CHECK(same(g[1], x0 * std::cos(x0 * x1) + std::exp(x1) / x0));
    }
  }
}
