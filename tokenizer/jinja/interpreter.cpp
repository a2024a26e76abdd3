#include "tokenizer/jinja/interpreter.h"

#include "tokenizer/jinja/attributes.h"
#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/py_text.h"

namespace rlf::jinja {
namespace {

constexpr int kMaxMacroDepth = 200;  // deeper recursion is a runaway template

// jinja2's LoopContext: loop.index, loop.first, loop.cycle(...), ...
class LoopContext : public Object {
 public:
  LoopContext(std::shared_ptr<const std::vector<Value>> items, size_t index)
      : items_(std::move(items)), index_(index) {}

  Value get_attr(const std::string& name) const override {
    const int64_t i = static_cast<int64_t>(index_), n = static_cast<int64_t>(items_->size());
    if (name == "index") return Value(i + 1);
    if (name == "index0") return Value(i);
    if (name == "revindex") return Value(n - i);
    if (name == "revindex0") return Value(n - i - 1);
    if (name == "first") return Value(i == 0);
    if (name == "last") return Value(i == n - 1);
    if (name == "length") return Value(n);
    if (name == "depth") return Value(1);
    if (name == "depth0") return Value(0);
    if (name == "previtem") return i > 0 ? (*items_)[index_ - 1] : Value::undefined("there is no previous item");
    if (name == "nextitem") return i + 1 < n ? (*items_)[index_ + 1] : Value::undefined("there is no next item");
    if (name == "cycle") {
      const size_t at = index_;
      return Value::callable(std::make_shared<NativeFunction>("cycle", [at](Interpreter&, CallArgs& a) -> Value {
        if (a.positional.empty()) raise(ErrorKind::Type, "no items for cycling given");
        return a.positional[at % a.positional.size()];
      }));
    }
    return Value::undefined("'LoopContext object' has no attribute '" + name + "'");
  }
  std::string type_name() const override { return "LoopContext"; }
  std::string repr() const override {
    return "<LoopContext " + std::to_string(index_ + 1) + "/" + std::to_string(items_->size()) + ">";
  }

 private:
  std::shared_ptr<const std::vector<Value>> items_;
  size_t index_;
};

// A macro (or a call block's caller): a body with parameters, closing over
// the frame it was defined in.
class Macro : public Callable {
 public:
  Macro(const Stmt& def, std::string name, std::shared_ptr<Frame> closure)
      : def_(def), name_(std::move(name)), closure_(std::move(closure)) {}

  Value call(Interpreter& interp, CallArgs args) override;
  std::string repr() const override { return "<Macro '" + name_ + "'>"; }

 private:
  void bind_keyword(Frame& f, std::vector<bool>& bound, Value& kwargs, std::string key, Value v) const;

  const Stmt& def_;
  std::string name_;
  std::shared_ptr<Frame> closure_;
};

void Macro::bind_keyword(Frame& f, std::vector<bool>& bound, Value& kwargs, std::string key, Value v) const {
  for (size_t i = 0; i < def_.params.size(); ++i)
    if (def_.params[i].name == key) {
      if (bound[i]) raise(ErrorKind::Type, "macro '" + name_ + "' got multiple values for argument '" + key + "'");
      f.vars[key] = std::move(v);
      bound[i] = true;
      return;
    }
  if (key == "caller" && def_.uses_caller) {
    f.vars["caller"] = std::move(v);
  } else if (def_.uses_kwargs) {
    kwargs.dict_set(Value(key), std::move(v));
  } else {
    raise(ErrorKind::Type, "macro '" + name_ + "' takes no keyword argument '" + key + "'");
  }
}

}  // namespace

Interpreter::Interpreter(std::unordered_map<std::string, Value> globals, InterpreterOptions options)
    : globals_(std::move(globals)), options_(options) {}

Interpreter::~Interpreter() {
  for (auto& weak : closures_)
    if (auto f = weak.lock()) f->vars.clear();
}

void Interpreter::emit(const std::string& text) {
  if (out_.size() == 1) ++n_top_level_yields_;
  out_.back() += text;
}

std::string Interpreter::render(const TemplateAst& ast) {
  frame_ = std::make_shared<Frame>();
  out_.assign(1, std::string());
  spans_.clear();
  n_top_level_yields_ = 0;
  if (exec_body(ast.body) != Flow::Normal) raise(ErrorKind::Syntax, "'break' or 'continue' outside a loop");
  return std::move(out_[0]);
}

Value Interpreter::lookup(const std::string& name) const {
  for (const Frame* f = frame_.get(); f != nullptr; f = f->parent.get()) {
    auto it = f->vars.find(name);
    if (it != f->vars.end()) return it->second;
  }
  auto it = globals_.find(name);
  if (it != globals_.end()) return it->second;
  return Value::undefined("'" + name + "' is undefined");
}

void Interpreter::assign(const Target& t, const Value& v) {
  switch (t.kind) {
    case Target::Kind::Name: frame_->vars[t.name] = v; return;
    case Target::Kind::NsRef: {
      const Value ns = lookup(t.name);
      if (!ns.is_object()) raise(ErrorKind::Runtime, "cannot assign attribute on non-namespace object");
      if (t.attr.rfind('_', 0) == 0)
        raise(ErrorKind::Security, "Chat templates cannot store underscore-prefixed attributes on a namespace, but got '" + t.attr + "'");
      ns.as_object()->set_attr(t.attr, v);
      return;
    }
    case Target::Kind::Tuple: {
      const std::vector<Value> items = iterate(v);
      if (items.size() < t.items.size())
        raise(ErrorKind::Runtime, "not enough values to unpack (expected " + std::to_string(t.items.size()) + ", got " +
                                   std::to_string(items.size()) + ")");
      if (items.size() > t.items.size())
        raise(ErrorKind::Runtime, "too many values to unpack (expected " + std::to_string(t.items.size()) + ")");
      for (size_t i = 0; i < items.size(); ++i) assign(t.items[i], items[i]);
      return;
    }
  }
}

// ---- statements ----

Interpreter::Flow Interpreter::exec_body(const Body& body) {
  for (const auto& s : body) {
    const Flow f = exec(*s);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s) {
  switch (s.kind) {
    case StmtKind::Output: exec_output(s); break;
    case StmtKind::If: return exec_if(s);
    case StmtKind::For: return exec_for(s);
    case StmtKind::Set: assign(s.target, eval(*s.expr)); break;
    case StmtKind::SetBlock: {
      Value v(capture(s.body));
      if (s.expr) v = apply_filter_chain(*s.expr, v);
      assign(s.target, v);
      break;
    }
    case StmtKind::Macro: exec_macro(s); break;
    case StmtKind::CallBlock: exec_call_block(s); break;
    case StmtKind::FilterBlock: emit(apply_filter_chain(*s.expr, Value(capture(s.body))).str()); break;
    case StmtKind::With: exec_with(s); break;
    case StmtKind::Block: emit(render_scope(s.body, std::make_shared<Frame>(Frame{{}, frame_}))); break;
    case StmtKind::Break: return Flow::Break;
    case StmtKind::Continue: return Flow::Continue;
    case StmtKind::Generation: exec_generation(s); break;
  }
  return Flow::Normal;
}

void Interpreter::exec_output(const Stmt& s) {
  for (const auto& p : s.parts) {
    emit(p.expr ? eval(*p.expr).str() : p.text);
  }
}

Interpreter::Flow Interpreter::exec_if(const Stmt& s) {
  for (size_t i = 0; i < s.tests.size(); ++i)
    if (eval(*s.tests[i]).truthy()) return exec_body(s.bodies[i]);
  return exec_body(s.else_body);
}

Interpreter::Flow Interpreter::exec_for(const Stmt& s) {
  if (s.recursive) raise(ErrorKind::Unsupported, "recursive for loops are not supported (line " + std::to_string(s.line) + ")");
  std::vector<Value> all = iterate(eval(*s.expr));
  const std::shared_ptr<Frame> outer = frame_;
  auto items = std::make_shared<std::vector<Value>>();
  if (s.cond) {
    for (const Value& v : all) {
      frame_ = std::make_shared<Frame>(Frame{{}, outer});
      assign(s.target, v);
      if (eval(*s.cond).truthy()) items->push_back(v);
    }
  } else {
    *items = std::move(all);
  }
  Flow result = Flow::Normal;
  try {
    for (size_t i = 0; i < items->size(); ++i) {
      frame_ = std::make_shared<Frame>(Frame{{}, outer});
      assign(s.target, (*items)[i]);
      frame_->vars["loop"] = Value::object(std::make_shared<LoopContext>(items, i));
      if (exec_body(s.body) == Flow::Break) break;
    }
    frame_ = outer;
    if (items->empty()) {
      frame_ = std::make_shared<Frame>(Frame{{}, outer});
      result = exec_body(s.else_body);
    }
  } catch (...) {
    frame_ = outer;
    throw;
  }
  frame_ = outer;
  return result;
}

void Interpreter::exec_macro(const Stmt& s) {
  closures_.push_back(frame_);
  frame_->vars[s.name] = Value::callable(std::make_shared<Macro>(s, s.name, frame_));
}

void Interpreter::exec_call_block(const Stmt& s) {
  Value caller = Value::callable(std::make_shared<Macro>(s, "caller", frame_));
  closures_.push_back(frame_);
  const Expr& call = *s.expr;
  Value callee = eval(*call.a);
  CallArgs args = eval_args(call);
  args.keyword.emplace_back("caller", caller);
  emit(this->call(callee, std::move(args)).str());
}

void Interpreter::exec_with(const Stmt& s) {
  std::vector<Value> values;
  for (const auto& v : s.values) values.push_back(eval(*v));
  const std::shared_ptr<Frame> outer = frame_;
  frame_ = std::make_shared<Frame>(Frame{{}, outer});
  try {
    for (size_t i = 0; i < values.size(); ++i) assign(s.targets[i], values[i]);
    exec_body(s.body);
  } catch (...) {
    frame_ = outer;
    throw;
  }
  frame_ = outer;
}

void Interpreter::exec_generation(const Stmt& s) {
  // transformers renders the body as a call block's caller (a scope of its
  // own), then records where its text starts in the top-level output.
  std::string text = render_scope(s.body, std::make_shared<Frame>(Frame{{}, frame_}));
  const size_t begin = out_[0].size();
  if (!options_.generation_after_output_only || n_top_level_yields_ > 0 || !spans_.empty())
    spans_.push_back(GenerationSpan{begin, begin + text.size()});
  emit(text);
}

std::string Interpreter::capture(const Body& body) {
  out_.emplace_back();
  Flow f;
  try {
    f = exec_body(body);
  } catch (...) {
    out_.pop_back();
    throw;
  }
  std::string text = std::move(out_.back());
  out_.pop_back();
  if (f != Flow::Normal) raise(ErrorKind::Syntax, "'break' or 'continue' inside a captured block");
  return text;
}

std::string Interpreter::render_scope(const Body& body, std::shared_ptr<Frame> frame) {
  if (++depth_ > kMaxMacroDepth) {
    depth_ = 0;
    raise(ErrorKind::Runtime, "maximum recursion depth exceeded in macro calls");
  }
  std::swap(frame_, frame);
  std::string text;
  try {
    text = capture(body);
  } catch (...) {
    std::swap(frame_, frame);
    --depth_;
    throw;
  }
  std::swap(frame_, frame);
  --depth_;
  return text;
}

Value Macro::call(Interpreter& interp, CallArgs args) {
  auto f = std::make_shared<Frame>(Frame{{}, closure_});
  std::vector<bool> bound(def_.params.size(), false);
  std::vector<Value> varargs;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < def_.params.size()) {
      f->vars[def_.params[i].name] = args.positional[i];
      bound[i] = true;
    } else if (def_.uses_varargs) {
      varargs.push_back(args.positional[i]);
    } else {
      raise(ErrorKind::Type, "macro '" + name_ + "' takes not more than " + std::to_string(def_.params.size()) +
                                 " argument(s)");
    }
  }
  Value kwargs = Value::dict();
  for (auto& [k, v] : args.keyword) bind_keyword(*f, bound, kwargs, k, v);
  if (def_.uses_varargs) f->vars["varargs"] = Value::tuple(varargs);
  if (def_.uses_kwargs) f->vars["kwargs"] = kwargs;
  for (size_t i = 0; i < def_.params.size(); ++i) {
    if (bound[i]) continue;
    const Param& p = def_.params[i];
    f->vars[p.name] = p.default_value ? interp.eval_in(*p.default_value, f)
                                      : Value::undefined("parameter '" + p.name + "' was not provided");
  }
  return Value(interp.render_scope(def_.body, f));
}

Value Interpreter::eval_in(const Expr& e, std::shared_ptr<Frame> frame) {
  std::swap(frame_, frame);
  Value v;
  try {
    v = eval(e);
  } catch (...) {
    std::swap(frame_, frame);
    throw;
  }
  std::swap(frame_, frame);
  return v;
}

// ---- expressions ----

Value Interpreter::eval(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Const: return e.value;
    case ExprKind::Name: return lookup(e.name);
    case ExprKind::List:
    case ExprKind::Tuple: {
      std::vector<Value> items;
      for (const auto& x : e.items) items.push_back(eval(*x));
      return e.kind == ExprKind::List ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    case ExprKind::Dict: {
      Value d = Value::dict();
      for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
        Value k = eval(*e.items[i]);
        d.dict_set(k, eval(*e.items[i + 1]));
      }
      return d;
    }
    case ExprKind::Getattr: return get_attribute(eval(*e.a), e.name);
    case ExprKind::Getitem:
      if (e.b->kind == ExprKind::Slice) {
        auto part = [&](const ExprPtr& x) { return x ? eval(*x) : Value::none(); };
        return get_slice(eval(*e.a), part(e.b->a), part(e.b->b), part(e.b->c));
      } else {
        return get_item(eval(*e.a), eval(*e.b));
      }
    case ExprKind::Slice: raise(ErrorKind::Syntax, "a slice outside a subscript");
    case ExprKind::Call: return eval_call(e);
    case ExprKind::Filter: return filter(e.name, e.a ? eval(*e.a) : Value(""), eval_args(e), e.line);
    case ExprKind::Test: return Value(test(e.name, eval(*e.a), eval_args(e), e.line));
    case ExprKind::Neg:
    case ExprKind::Pos: return unary_op(e.kind == ExprKind::Neg, eval(*e.a));
    case ExprKind::Not: return Value(!eval(*e.a).truthy());
    case ExprKind::And: {
      Value l = eval(*e.a);
      return l.truthy() ? eval(*e.b) : l;
    }
    case ExprKind::Or: {
      Value l = eval(*e.a);
      return l.truthy() ? l : eval(*e.b);
    }
    case ExprKind::Binary: return binary_op(e.op, eval(*e.a), eval(*e.b));
    case ExprKind::Concat: {
      std::string s;
      for (const auto& x : e.items) s += eval(*x).str();
      return Value(s);
    }
    case ExprKind::Compare: return eval_compare(e);
    case ExprKind::CondExpr:
      if (eval(*e.a).truthy()) return eval(*e.b);
      if (e.c) return eval(*e.c);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                              " evaluated to false and no else section was defined.");
  }
  return Value();
}

CallArgs Interpreter::eval_args(const Expr& e, size_t skip_items) {
  CallArgs args;
  for (size_t i = skip_items; i < e.items.size(); ++i) args.positional.push_back(eval(*e.items[i]));
  for (const auto& [k, v] : e.kwargs) args.keyword.emplace_back(k, eval(*v));
  if (e.dyn_args)
    for (const Value& v : iterate(eval(*e.dyn_args))) args.positional.push_back(v);
  if (e.dyn_kwargs) {
    const Value d = eval(*e.dyn_kwargs);
    if (!d.is_dict()) raise(ErrorKind::Type, "argument after ** must be a mapping, not " + d.type_name());
    for (const auto& [k, v] : d.entries()) {
      if (!k.is_string()) raise(ErrorKind::Type, "keywords must be strings");
      args.keyword.emplace_back(k.as_string(), v);
    }
  }
  return args;
}

Value Interpreter::eval_call(const Expr& e) {
  Value callee = eval(*e.a);
  return call(callee, eval_args(e));
}

Value Interpreter::call(const Value& callee, CallArgs args) {
  if (callee.is_callable()) return callee.as_callable()->call(*this, std::move(args));
  if (callee.is_undefined()) callee.fail_undefined();
  raise(ErrorKind::Type, "'" + callee.type_name() + "' object is not callable");
}

Value Interpreter::eval_compare(const Expr& e) {
  Value left = eval(*e.a);
  for (const auto& [op, rhs] : e.compares) {
    Value right = eval(*rhs);
    bool ok = false;
    switch (op) {
      case CmpOp::Eq: ok = left == right; break;
      case CmpOp::Ne: ok = left != right; break;
      case CmpOp::Lt: ok = less_than(left, right); break;
      case CmpOp::Le: ok = !less_than(right, left); break;
      case CmpOp::Gt: ok = less_than(right, left); break;
      case CmpOp::Ge: ok = !less_than(left, right); break;
      case CmpOp::In: ok = contains(right, left); break;
      case CmpOp::NotIn: ok = !contains(right, left); break;
    }
    if (!ok) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

Value Interpreter::apply_filter_chain(const Expr& f, const Value& subject) {
  const Value inner = f.a ? apply_filter_chain(*f.a, subject) : subject;
  return filter(f.name, inner, eval_args(f), f.line);
}

Value Interpreter::filter(const std::string& name, const Value& subject, CallArgs args, int line) {
  const FilterFn* f = find_filter(name);
  if (f == nullptr) raise(ErrorKind::Unsupported, "No filter named '" + name + "' (line " + std::to_string(line) + ")");
  return (*f)(*this, subject, args);
}

bool Interpreter::test(const std::string& name, const Value& subject, CallArgs args, int line) {
  const TestFn* t = find_test(name);
  if (t == nullptr) raise(ErrorKind::Unsupported, "No test named '" + name + "' (line " + std::to_string(line) + ")");
  return (*t)(*this, subject, args);
}

}  // namespace rlf::jinja
