// clang-format off
// The element type of reverse mode (generate/derivative.cpp): a taped number, a value, its
// place on the tape of the pass that computed it, and its derivative in the number recorded
// there, which the op's own C code computes with when its `DTYPE_INPUT_i`/`DTYPE_OUTPUT_i`
// name it. An operation on two taped numbers (arithmetic, the math functions of
// derivative_rules.h) appends one entry to the tape: the places of its operands and its
// partial derivative in each. An operation on one taped number (a math function, arithmetic
// with a plain number, a sum with a constant) records nothing: its result keeps the operand's
// place, its derivative there the chain rule's product, so a chain of them costs no entry
// (Kepler's solver: 37 entries a point, not 62; celerite's, nearly all products of two taped
// numbers, 112, not 118). A constant (a plain number, or a result of constants only) records
// nothing. The backward sweep then runs the entries from the last to the first, adding each
// result's adjoint times its partials to its operands' adjoints: the whole gradient for the
// cost of one pass and one sweep, whatever the number of differentiated scalars. An adjoint
// that is zero is skipped, so an infinite partial (sqrt at 0) reaches no other element's
// gradient as 0 * inf = NaN; along one number's own chain the slopes multiply as the chain
// rule has them (cos(sqrt(x)) at 0 is NaN, as in forward mode and JAX).
//
// A taped number's `id` is its place on the tape plus the tape's generation (a new one each
// pass) times 2^32: a number kept from an earlier pass (a memo in a static variable) is told
// from this pass's, and marks the tape stale instead of adding its adjoint to a stranger.
//
// The tape's memory is bounded (`tape::begin`'s limit): past it the tape stops recording (the
// values go on, an operation of two taped numbers gives a constant), says it is `full`, and the driver falls back on
// forward passes. An entry is 24 bytes; the sweep adds 8 bytes of adjoint per entry, which
// it leaves zero for the next sweep.
//
// C++ only. Embedded at build time (libsection/embed.cmake), these notes left out.
#ifndef LIBSECTION_TAPE_H
#define LIBSECTION_TAPE_H
#include <atomic>
#include <cstdlib>

namespace libsection {

// One operation: the places of its (at most two) operands on the tape, 0 for none, and the
// partial derivative of its result in each.
struct tape_entry {
  std::uint32_t arg[2];
  double partial[2];
};

class tape;
// The tape the numbers of this thread record on while a pass runs (tape_scope sets it).
static thread_local tape* current_tape = nullptr;

class tape {
 public:
  // Bytes per operation: its entry, and its adjoint in the sweep.
  static constexpr std::size_t bytes_per_entry = sizeof(tape_entry) + sizeof(double);

  tape() = default;
  tape(tape const&) = delete;
  tape& operator=(tape const&) = delete;
  ~tape() {
    std::free(entries_);
    std::free(adjoints_);
  }

  // A new pass of at most `max_bytes` (entries and adjoints): its storage is kept from the last.
  void begin(std::size_t max_bytes) {
    static std::atomic<std::uint32_t> generations{0};
    base_ = (std::uint64_t)(++generations) << 32;
    size_ = 1;  // place 0: no operand (its adjoint is where constants' partials go)
    max_entries_ = std::min<std::size_t>(max_bytes / bytes_per_entry, UINT32_MAX);
    full_ = no_memory_ = stale_ = false;
    if (capacity_ > max_entries_) trim(0);  // kept from a pass under a larger limit
    if (capacity_ == 0 && !grow()) return;
    entries_[0] = tape_entry{{0, 0}, {0, 0}};
  }
  // The place of operand `id` on this tape; 0 for a constant, and for a number of an earlier
  // pass, which makes the tape stale.
  std::uint32_t place(std::uint64_t id) {
    std::uint64_t const k = id - base_;
    if (k < size_) return (std::uint32_t)k;
    if (id != 0) stale_ = true;
    return 0;
  }
  // A new entry: the id of its result (0 once the tape is full).
  std::uint64_t record(std::uint32_t a, double pa, std::uint32_t b, double pb) {
    if (size_ >= capacity_ && !grow()) return 0;
    tape_entry& e = entries_[size_];
    e.arg[0] = a;
    e.arg[1] = b;
    e.partial[0] = pa;
    e.partial[1] = pb;
    return base_ + size_++;
  }
  // An independent variable (a differentiated input's element): an entry of no operand.
  std::uint64_t independent() { return record(0, 0.0, 0, 0.0); }
  std::size_t position(std::uint64_t id) const { return id ? (std::size_t)(id - base_) : 0; }

  // Adds each entry's adjoint times its partials to its operands', last to first; `adjoint`
  // has `size()` elements, seeded by the caller; after it, an independent variable's element
  // is its adjoint and the others are zero (each is read once, then cleared, so the next
  // sweep needs no memset: see `cleared`). Returns the independent variables met. What goes
  // to the entry just before is kept in a register (`next`) until that entry's turn: most
  // operations take the one before, and a store and a load of it per entry would make the
  // sweep wait on memory. It is set, not added to a zero, where it can be: an addition is on
  // the chain each entry waits for.
  std::size_t sweep(double* adjoint) const {
    double next = 0;
    std::size_t independent = 0;
    for (std::size_t k = size_ - 1; k > 0; --k) {
      double const a = adjoint[k] + next;
      tape_entry const& e = entries_[k];
      std::uint32_t const before = std::uint32_t(k - 1);
      adjoint[k] = 0;
      if ((e.arg[0] | e.arg[1]) == 0) {  // an independent variable: its adjoint is its gradient
        adjoint[k] = a;
        next = 0;
        ++independent;
      } else if (a == 0) {  // nothing to pass on (and no NaN from 0 * inf)
        next = 0;
      } else if (e.arg[0] == before) {
        next = e.partial[0] * a;
        if (e.arg[1] == before) next += e.partial[1] * a;
        else adjoint[e.arg[1]] += e.partial[1] * a;
      } else {
        adjoint[e.arg[0]] += e.partial[0] * a;
        if (e.arg[1] == before) {
          next = e.partial[1] * a;
        } else {
          adjoint[e.arg[1]] += e.partial[1] * a;
          next = 0;
        }
      }
    }
    adjoint[0] = 0;  // where constants' partials went: read by no one
    return independent;
  }
  // `size()` adjoints, all zero, for the sweep: storage kept between passes as the entries'
  // is (a large pass's fresh pages would cost more than zeroing warm ones), zeroed where a
  // sweep did not leave it zero; NULL when there is no memory.
  double* zeroed_adjoints() {
    if (adjoint_capacity_ < size_) {
      std::free(adjoints_);
      adjoints_ = (double*)std::malloc(capacity_ * sizeof(double));
      adjoint_capacity_ = adjoints_ ? capacity_ : 0;
      zero_ = 0;
      if (!adjoints_) return NULL;
    }
    if (zero_ < size_) std::memset(adjoints_ + zero_, 0, (size_ - zero_) * sizeof(double));
    zero_after_ = std::max(zero_, size_);
    zero_ = 0;  // dirty until a whole sweep (`cleared`)
    return adjoints_;
  }
  // After a sweep whose independent variables' adjoints the caller took and set to zero: the
  // adjoints are all zero again (as far as they were before the pass).
  void cleared() { zero_ = zero_after_; }

  std::size_t size() const { return size_; }
  std::size_t max_entries() const { return max_entries_; }
  bool full() const { return full_; }
  bool no_memory() const { return no_memory_; }  // full before its limit: realloc failed
  bool stale() const { return stale_; }
  std::size_t capacity_bytes() const {
    return capacity_ * sizeof(tape_entry) + adjoint_capacity_ * sizeof(double);
  }
  // Gives back storage over `keep` bytes (a large pass's) between calls.
  void trim(std::size_t keep) {
    if (capacity_bytes() <= keep) return;
    std::free(entries_);
    std::free(adjoints_);
    entries_ = nullptr;
    adjoints_ = nullptr;
    capacity_ = adjoint_capacity_ = zero_ = 0;
  }

 private:
  // Out of line: rarely called, and inlined it would bloat each operation of the op's code.
  __attribute__((noinline)) bool grow() {
    std::size_t const wanted = std::min(std::max<std::size_t>(2 * capacity_, 4096), max_entries_);
    if (wanted <= capacity_) return !(full_ = true);
    void* more = std::realloc(entries_, wanted * sizeof(tape_entry));
    if (!more) return !(full_ = no_memory_ = true);
    entries_ = (tape_entry*)more;
    capacity_ = wanted;
    return true;
  }

  tape_entry* entries_ = nullptr;
  double* adjoints_ = nullptr;
  std::size_t size_ = 0, capacity_ = 0, max_entries_ = 0, adjoint_capacity_ = 0;
  std::size_t zero_ = 0, zero_after_ = 0;  // the adjoints known to be zero: [0, zero_)
  std::uint64_t base_ = 0;
  bool full_ = false, no_memory_ = false, stale_ = false;
};

// The tape the numbers of this thread record on, while it lives.
class tape_scope {
 public:
  explicit tape_scope(tape& t) : previous_(current_tape) { current_tape = &t; }
  tape_scope(tape_scope const&) = delete;
  tape_scope& operator=(tape_scope const&) = delete;
  ~tape_scope() { current_tape = previous_; }

 private:
  tape* previous_;
};

template <class T>
struct active {
  static_assert(std::is_floating_point<T>::value, "a taped number's scalar is a floating type");
  typedef T scalar;
  T v;
  std::uint64_t id;  // its place on the tape of its pass, with the pass's generation; 0: a constant
  double slope;      // its derivative in the number recorded at `id`
  active() : id(0), slope(1) {}
  template <class A, if_plain<A> = 0>
  active(A a) : v(static_cast<T>(a)), id(0), slope(1) {}
  template <class U, std::enable_if_t<!std::is_same<U, T>::value, int> = 0>
  active(active<U> const& o) : v(static_cast<T>(o.v)), id(o.id), slope(o.slope) {}
  template <class I, std::enable_if_t<std::is_integral<I>::value, int> = 0>
  explicit operator I() const { return static_cast<I>(v); }
  template <class X> active& operator+=(X const& o) { return *this = *this + o; }
  template <class X> active& operator-=(X const& o) { return *this = *this - o; }
  template <class X> active& operator*=(X const& o) { return *this = *this * o; }
  template <class X> active& operator/=(X const& o) { return *this = *this / o; }
  active& operator++() { v += 1; return *this; }
  active& operator--() { v -= 1; return *this; }
  active operator++(int) { active old = *this; v += 1; return old; }
  active operator--(int) { active old = *this; v -= 1; return old; }
};
template <class T> struct is_number<active<T>> : std::true_type {};

// An output's seed: `cotangent` times its slope, added to the adjoint of its place (a zero
// adds nothing, so an infinite slope there gives no NaN).
template <class T>
inline void seed(tape& t, double* adjoint, active<T> const& y, double cotangent) {
  if (cotangent != 0) adjoint[t.place(y.id)] += cotangent * y.slope;
}

// A result of `value` whose partial in taped number `a` is `pa`: `a`'s place, no entry, its
// slope there the chain rule's product.
template <class R, class T>
inline active<R> chained(R value, active<T> const& a, double pa) {
  active<R> r(value);
  if (a.id) {
    r.id = a.id;
    r.slope = pa * a.slope;
  }
  return r;
}
// A result of `value` whose partials in `a` and `b` are `pa` and `pb`: an entry when either is
// taped (a constant's place is 0; folding that case as a unary one costs more branches than
// its entries save). The tape is read on every path: in a module a thread_local's read is a
// call, which a loop's operations share only when each of them makes it.
template <class R, class T, class U>
inline active<R> taped(R value, active<T> const& a, double pa, active<U> const& b, double pb) {
  tape* const t = current_tape;
  active<R> r(value);
  if ((a.id | b.id) && t) r.id = t->record(t->place(a.id), pa * a.slope, t->place(b.id), pb * b.slope);
  return r;
}

template <class T> inline active<T> operator+(active<T> const& a) { return a; }
template <class T> inline active<T> operator-(active<T> const& a) { return chained(T(-a.v), a, -1.0); }
// A sum with a constant (a taped number of constants only: an accumulator's 0.0) has the
// derivative of its other term: that term's place and slope.
template <class T, class U>
inline active<std::common_type_t<T, U>> operator+(active<T> const& a, active<U> const& b) {
  typedef std::common_type_t<T, U> R;
  R const v = a.v + b.v;
  if (!b.id) return chained(v, a, 1.0);
  if (!a.id) return chained(v, b, 1.0);
  return taped(v, a, 1.0, b, 1.0);
}
template <class T, class U>
inline active<std::common_type_t<T, U>> operator-(active<T> const& a, active<U> const& b) {
  typedef std::common_type_t<T, U> R;
  R const v = a.v - b.v;
  if (!b.id) return chained(v, a, 1.0);
  return taped(v, a, 1.0, b, -1.0);
}
template <class T, class U>
inline active<std::common_type_t<T, U>> operator*(active<T> const& a, active<U> const& b) {
  typedef std::common_type_t<T, U> R;
  return taped(R(a.v * b.v), a, double(b.v), b, double(a.v));
}
template <class T, class U>
inline active<std::common_type_t<T, U>> operator/(active<T> const& a, active<U> const& b) {
  typedef std::common_type_t<T, U> R;
  R const q = R(a.v) / R(b.v);
  return taped(q, a, double(R(1) / R(b.v)), b, double(-q / R(b.v)));
}
// A plain number on either side: the partial in the taped one only.
template <class T, class A, if_plain<A> = 0>
inline active<mixed<T, A>> operator+(active<T> const& a, A b) {
  return chained(mixed<T, A>(a.v + b), a, 1.0);
}
template <class T, class A, if_plain<A> = 0>
inline active<mixed<T, A>> operator+(A b, active<T> const& a) { return a + b; }
template <class T, class A, if_plain<A> = 0>
inline active<mixed<T, A>> operator-(active<T> const& a, A b) {
  return chained(mixed<T, A>(a.v - b), a, 1.0);
}
template <class T, class A, if_plain<A> = 0>
inline active<mixed<T, A>> operator-(A b, active<T> const& a) {
  return chained(mixed<T, A>(b - a.v), a, -1.0);
}
template <class T, class A, if_plain<A> = 0>
inline active<mixed<T, A>> operator*(active<T> const& a, A b) {
  return chained(mixed<T, A>(a.v * b), a, double(b));
}
template <class T, class A, if_plain<A> = 0>
inline active<mixed<T, A>> operator*(A b, active<T> const& a) { return a * b; }
template <class T, class A, if_plain<A> = 0>
inline active<mixed<T, A>> operator/(active<T> const& a, A b) {
  typedef mixed<T, A> R;
  return chained(R(a.v / b), a, double(R(1) / R(b)));
}
template <class T, class A, if_plain<A> = 0>
inline active<mixed<T, A>> operator/(A b, active<T> const& a) {
  typedef mixed<T, A> R;
  R const q = R(b) / R(a.v);
  return chained(q, a, double(-q / R(a.v)));
}

// The math functions of derivative_rules.h on taped numbers: the slope only for a taped one.
#define LIBSECTION_ACTIVE_UNARY(name, value, slope)                   \
  template <class T> inline active<T> name(active<T> const& a) {      \
    T const x = a.v;                                                  \
    T const y = value;                                                \
    if (!a.id) return active<T>(y);                                   \
    return chained(y, a, double(T(slope)));                           \
  }
LIBSECTION_SMOOTH_RULES(LIBSECTION_ACTIVE_UNARY)
#undef LIBSECTION_ACTIVE_UNARY
// |x| is x where x > 0, its place kept (so a convergence test's `fabs(step) < tol` records
// nothing), -x where x < 0, and a constant at 0 and at NaN (its derivative there, as the rule's).
#define LIBSECTION_ACTIVE_SIGN(name, ...)                        \
  template <class T> inline active<T> name(active<T> const& a) { \
    if (a.v > 0) return a;                                       \
    if (a.v < 0) return -a;                                      \
    return active<T>(std::fabs(a.v));                            \
  }
LIBSECTION_SIGN_RULES(LIBSECTION_ACTIVE_SIGN)
#undef LIBSECTION_ACTIVE_SIGN
// A step's derivative is zero: its result is a constant, which records nothing.
#define LIBSECTION_ACTIVE_STEP(name, value, slope)               \
  template <class T> inline active<T> name(active<T> const& a) { \
    T const x = a.v;                                             \
    return active<T>(T(value));                                  \
  }
LIBSECTION_STEP_RULES(LIBSECTION_ACTIVE_STEP)
#undef LIBSECTION_ACTIVE_STEP

// Each binary function for (taped, taped), (taped, number) and (number, taped).
#define LIBSECTION_ACTIVE_BINARY(name, value, dx, dy)                                      \
  template <class T, class U>                                                              \
  inline active<std::common_type_t<T, U>> name(active<T> const& a, active<U> const& b) {   \
    typedef std::common_type_t<T, U> R;                                                    \
    R const x = a.v, y = b.v, z = value;                                                   \
    if (!(a.id | b.id)) return active<R>(z);                                               \
    return taped(z, a, double(R(dx)), b, double(R(dy)));                                   \
  }                                                                                        \
  template <class T, class A, if_plain<A> = 0>                                             \
  inline active<mixed<T, A>> name(active<T> const& a, A bv) {                              \
    typedef mixed<T, A> R;                                                                 \
    R const x = a.v, y = R(bv), z = value;                                                 \
    (void)y;                                                                               \
    if (!a.id) return active<R>(z);                                                        \
    return chained(z, a, double(R(dx)));                                                   \
  }                                                                                        \
  template <class T, class A, if_plain<A> = 0>                                             \
  inline active<mixed<T, A>> name(A av, active<T> const& b) {                              \
    typedef mixed<T, A> R;                                                                 \
    R const x = R(av), y = b.v, z = value;                                                 \
    (void)x;                                                                               \
    if (!b.id) return active<R>(z);                                                        \
    return chained(z, b, double(R(dy)));                                                   \
  }
LIBSECTION_BINARY_RULES(LIBSECTION_ACTIVE_BINARY)
#undef LIBSECTION_ACTIVE_BINARY

}  // namespace libsection

LIBSECTION_STD_NAMES
#endif
