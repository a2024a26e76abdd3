// Python's operators on template values: + - * / // % ** and unary -/+,
// with Python's int/float/bool rules, str and list concatenation and
// repetition, floor division and modulo rounding toward negative infinity,
// printf-style `str % args`, and Python's TypeError messages. An undefined
// operand raises its UndefinedError, as jinja2's Undefined does.
#pragma once

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/value.h"

namespace rlf::jinja {

Value binary_op(BinOp op, const Value& a, const Value& b);
Value unary_op(bool negate, const Value& a);

// `format % args` (also the `format` filter): %s %r %d %i %f %e %g %x %o %c %%
// with flags, width and precision; args a tuple, a dict for %(name)s, or one value.
std::string percent_format(const std::string& format, const Value& args);

// markupsafe.escape: & < > " ' as HTML entities (a Markup is returned as is).
std::string html_escape(const Value& v);

}  // namespace rlf::jinja
