// A struct of named doubles seen as one span of doubles, so a reduction across
// ranks (train/reducer.h Reducer::sum_fields, algorithms' BatchSum) takes a
// step's statistics by name in one call instead of packing them into a
// double[K] and reading them back by index:
//
//   struct Sums { double n = 0, sum = 0; } s;
//   ... s.n += 1, s.sum += x ...
//   reducer.sum_fields(s);                    // one collective, fields in declaration order
//   mean = s.sum / s.n;
//
// DoubleFields<S> holds for an aggregate whose members are all double (and
// nothing else; checked at compile time), so a field can never be an int
// silently reinterpreted.
#pragma once

#include <array>
#include <cstddef>
#include <cstring>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace rlf {

namespace detail {
// Converts to double and nothing else: an aggregate initialisable from N of
// these, N = sizeof / sizeof(double), has exactly N double members.
struct OnlyDouble {
  template <class T, class = std::enable_if_t<std::is_same_v<T, double>>>
  operator T() const;
};
template <class S, size_t... I>
constexpr bool inits_from_doubles(std::index_sequence<I...>) {
  return requires { S{((void)I, OnlyDouble{})...}; };
}
}  // namespace detail

template <class S>
concept DoubleFields = std::is_aggregate_v<S> && std::is_trivially_copyable_v<S> && sizeof(S) % sizeof(double) == 0 &&
                       detail::inits_from_doubles<S>(std::make_index_sequence<sizeof(S) / sizeof(double)>{});

template <DoubleFields S>
constexpr size_t n_fields = sizeof(S) / sizeof(double);

// Calls fn(std::span<double>) on the fields of `s` in declaration order and
// writes the span back into them.
template <DoubleFields S, class Fn>
void over_fields(S& s, Fn&& fn) {
  std::array<double, n_fields<S>> v;
  std::memcpy(v.data(), &s, sizeof(S));
  fn(std::span<double>(v));
  std::memcpy(&s, v.data(), sizeof(S));
}

// The same over rows of such structs: one span, row after row.
template <DoubleFields S, class Fn>
void over_fields(std::vector<S>& rows, Fn&& fn) {
  std::vector<double> v(rows.size() * n_fields<S>);
  if (!rows.empty()) std::memcpy(v.data(), rows.data(), rows.size() * sizeof(S));
  fn(std::span<double>(v));
  if (!rows.empty()) std::memcpy(rows.data(), v.data(), rows.size() * sizeof(S));
}

}  // namespace rlf
