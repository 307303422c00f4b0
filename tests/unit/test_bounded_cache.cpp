// The bounded memo table the in-process memos use.
#include <doctest/doctest.h>

#include <string>

#include "section/bounded_cache.hpp"

using section::BoundedCache;

TEST_SUITE("base") {
  TEST_CASE("a bounded cache lets the least recently used entry go past its capacity") {
    BoundedCache<std::string, int> cache(2);
    cache.put("a", 1);
    cache.put("b", 2);
    REQUIRE(cache.find("a"));  // `a` is now the most recently used: `b` goes next
    cache.put("c", 3);
    CHECK(cache.size() == 2);
    CHECK(cache.find("b") == nullptr);
    CHECK(*cache.find("a") == 1);
    CHECK(*cache.find("c") == 3);
  }

  TEST_CASE("putting a key again replaces its value and makes it the most recently used") {
    BoundedCache<std::string, int> cache(2);
    cache.put("a", 1);
    cache.put("b", 2);
    CHECK(cache.put("a", 10) == 10);
    cache.put("c", 3);
    CHECK(cache.size() == 2);
    CHECK(cache.find("b") == nullptr);
    CHECK(*cache.find("a") == 10);
  }

  TEST_CASE("a bounded cache holds at least one entry") {
    CHECK_THROWS_AS((BoundedCache<int, int>(0)), std::invalid_argument);
    BoundedCache<int, int> one(1);
    one.put(1, 1);
    one.put(2, 2);
    CHECK(one.find(1) == nullptr);
    CHECK(*one.find(2) == 2);
  }
}
