// jinja2's built-in filters, tests and globals, with jinja2's semantics and
// transformers' `tojson` (json.dumps with ensure_ascii=False and its indent,
// separators and sort_keys arguments, no HTML escaping).
//
// Filters: abs attr batch capitalize center count d default dictsort e escape
// first float forceescape format groupby indent int items join last length
// list lower map max min reject rejectattr replace reverse round safe select
// selectattr slice sort string striptags sum title tojson trim truncate unique
// upper wordcount.
// Tests: boolean callable defined divisibleby eq equalto escaped even false
// filter float ge greaterthan gt in integer iterable le lessthan lower lt
// mapping ne none number odd sameas sequence string test true undefined upper.
// Globals: range dict namespace cycler joiner.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/jinja/value.h"

namespace rlf::jinja {

using FilterFn = Value (*)(Interpreter&, const Value& subject, CallArgs& args);
using TestFn = bool (*)(Interpreter&, const Value& subject, CallArgs& args);

// nullptr when there is no such filter / test.
const FilterFn* find_filter(const std::string& name);
const TestFn* find_test(const std::string& name);

// jinja2's default globals: range (limited to 100,000 items, as the sandbox),
// dict, namespace, cycler, joiner.
std::unordered_map<std::string, Value> default_globals();

// Binds a call's arguments to `params` as Python binds them (positional, then
// by name); missing optional parameters are nullopt. Throws TypeError naming
// `fn` for too many arguments, an unknown keyword, or a missing required one.
std::vector<std::optional<Value>> bind_args(const CallArgs& args, const std::string& fn,
                                            std::initializer_list<std::string_view> params, size_t n_required = 0);

}  // namespace rlf::jinja
