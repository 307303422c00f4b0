// A memo table of bounded size, for the in-process memos that must stay: a long-running process
// (a notebook, the language server) would otherwise keep every entry it ever made. The least
// recently used entry goes when a new one would pass the bound.
#pragma once

#include <cstddef>
#include <iterator>
#include <list>
#include <map>
#include <stdexcept>
#include <utility>

namespace section {

template <class Key, class Value>
class BoundedCache {
 public:
  /// Holds at most `capacity` entries (at least one).
  explicit BoundedCache(std::size_t capacity) : capacity_(capacity) {
    if (capacity == 0) throw std::invalid_argument("a bounded cache holds at least one entry");
  }

  /// The value of `key`, now the most recently used; nullptr when it is not there. The pointer
  /// stays valid until the entry is evicted or replaced.
  Value* find(Key const& key) {
    auto const it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->second;
  }

  /// Adds `key` (or replaces its value) as the most recently used entry, evicting the least
  /// recently used one past the capacity; returns the value held.
  Value& put(Key const& key, Value value) {
    if (Value* held = find(key)) return *held = std::move(value);
    order_.emplace_front(key, std::move(value));
    index_.emplace(key, order_.begin());
    if (order_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    return order_.front().second;
  }

  std::size_t size() const { return order_.size(); }
  std::size_t capacity() const { return capacity_; }

 private:
  using Entries = std::list<std::pair<Key, Value>>;
  std::size_t capacity_;
  Entries order_;  // most recently used first
  std::map<Key, typename Entries::iterator> index_;
};

}  // namespace section
