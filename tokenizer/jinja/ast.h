// The syntax tree of a Jinja template, as jinja2's parser builds it (the
// node kinds of jinja2.nodes that chat templates use). Built by parser.h,
// walked by interpreter.h.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/value.h"

namespace rlf::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using Body = std::vector<std::unique_ptr<Stmt>>;

enum class ExprKind {
  Const,     // value
  Name,      // name
  List,      // items
  Tuple,     // items
  Dict,      // items: key0, value0, key1, value1, ...
  Getattr,   // a.name
  Getitem,   // a[b]
  Slice,     // a:b:c (any may be null), only as a Getitem key
  Call,      // a(items..., kwargs..., *dyn_args, **dyn_kwargs)
  Filter,    // a | name(items..., kwargs...); a null in a filter block or `set` block
  Test,      // a is name(items..., kwargs...)
  Neg, Pos, Not,  // unary on a
  And, Or,        // a and/or b
  Binary,    // a op b
  Concat,    // items joined with ~
  Compare,   // a op0 x0 op1 x1 ...
  CondExpr,  // b if a else c (c may be null)
};

enum class BinOp { Add, Sub, Mul, Div, FloorDiv, Mod, Pow };
enum class CmpOp { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

struct Expr {
  ExprKind kind = ExprKind::Const;
  int line = 1;
  Value value;                  // Const
  std::string name;             // Name, Getattr, Filter, Test
  ExprPtr a, b, c;              // operands (see ExprKind)
  std::vector<ExprPtr> items;   // List, Tuple, Dict, Concat, call/filter/test arguments
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  ExprPtr dyn_args, dyn_kwargs;  // *args, **kwargs of a call
  BinOp op = BinOp::Add;
  std::vector<std::pair<CmpOp, ExprPtr>> compares;
  bool ns_ref = false;          // Getattr parsed as `ns.attr` in an assignment target
};

// An assignment target: `x`, `a, b` (possibly nested) or `ns.attr`.
struct Target {
  enum class Kind { Name, Tuple, NsRef } kind = Kind::Name;
  std::string name;             // Name; namespace variable for NsRef
  std::string attr;             // NsRef
  std::vector<Target> items;    // Tuple
};

enum class StmtKind {
  Output,       // parts: text or expression, in order
  If,           // tests[i] -> bodies[i]; else_body
  For,          // for target in expr [if cond] [recursive]: body; else_body
  Set,          // set target = expr
  SetBlock,     // set target [| filter]: body captured
  Macro,        // macro name(params = defaults): body
  CallBlock,    // call(params) expr: body is the caller
  FilterBlock,  // filter expr: body
  With,         // with targets = values: body
  Block,        // block name: body (rendered in place; no inheritance)
  Break, Continue,
  Generation,   // transformers' {% generation %}: body marks trainable text
};

struct OutputPart {
  std::string text;  // literal template data when expr is null
  ExprPtr expr;
};

struct Param {
  std::string name;
  ExprPtr default_value;  // null: required
};

struct Stmt {
  StmtKind kind = StmtKind::Output;
  int line = 1;
  std::vector<OutputPart> parts;
  std::vector<ExprPtr> tests;
  std::vector<Body> bodies;
  Body body, else_body;
  Target target;
  std::vector<Target> targets;   // With
  std::vector<ExprPtr> values;   // With
  ExprPtr expr, cond;            // For: iterable, filter; Set: value; CallBlock: the call; FilterBlock/SetBlock: filter
  bool recursive = false;
  std::string name;              // Macro, Block
  std::vector<Param> params;     // Macro, CallBlock
  bool uses_varargs = false, uses_kwargs = false, uses_caller = false;  // Macro body refers to them
};

struct TemplateAst {
  Body body;
};

}  // namespace rlf::jinja
