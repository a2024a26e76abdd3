// Attribute and item lookup as jinja2's ImmutableSandboxedEnvironment does
// it: `x.name` tries Python's attribute first (a dict's `items` is its method,
// not its "items" key) then the item; `x[key]` tries the item first, then the
// attribute. Methods that mutate a list or dict are blocked: reading them
// gives an undefined value whose use raises SecurityError. Missing things are
// undefined values carrying jinja2's message ("'dict object' has no attribute
// 'x'"). The str, list and dict methods real chat templates call are here.
#pragma once

#include <string>

#include "tokenizer/jinja/value.h"

namespace rlf::jinja {

Value get_attribute(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
// obj[start:stop:step] for str, list and tuple (None for an omitted part).
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// The bound method `name` of a str, list or dict, or undefined (a blocked
// mutating method gives a SecurityError undefined).
Value builtin_method(const Value& self, const std::string& name);
// Calls that method directly (raises when there is none).
Value call_method(const Value& self, const std::string& name, CallArgs args);

}  // namespace rlf::jinja
