#include "tokenizer/jinja/parser.h"

#include <functional>
#include <initializer_list>

namespace rlf::jinja {
namespace {

ExprPtr make(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

// Whether `body` reads the variable `name` anywhere (for a macro's varargs,
// kwargs and caller, which jinja2 only accepts when the body uses them).
bool expr_reads(const Expr* e, const std::string& name) {
  if (e == nullptr) return false;
  if (e->kind == ExprKind::Name && e->name == name) return true;
  for (const Expr* x : {e->a.get(), e->b.get(), e->c.get(), e->dyn_args.get(), e->dyn_kwargs.get()})
    if (expr_reads(x, name)) return true;
  for (const auto& x : e->items)
    if (expr_reads(x.get(), name)) return true;
  for (const auto& kw : e->kwargs)
    if (expr_reads(kw.second.get(), name)) return true;
  for (const auto& cmp : e->compares)
    if (expr_reads(cmp.second.get(), name)) return true;
  return false;
}

bool body_reads(const Body& body, const std::string& name);

bool stmt_reads(const Stmt& s, const std::string& name) {
  for (const auto& p : s.parts)
    if (expr_reads(p.expr.get(), name)) return true;
  for (const auto& t : s.tests)
    if (expr_reads(t.get(), name)) return true;
  for (const auto& b : s.bodies)
    if (body_reads(b, name)) return true;
  for (const auto& v : s.values)
    if (expr_reads(v.get(), name)) return true;
  for (const auto& p : s.params)
    if (expr_reads(p.default_value.get(), name)) return true;
  return body_reads(s.body, name) || body_reads(s.else_body, name) || expr_reads(s.expr.get(), name) ||
         expr_reads(s.cond.get(), name);
}

bool body_reads(const Body& body, const std::string& name) {
  for (const auto& s : body)
    if (stmt_reads(*s, name)) return true;
  return false;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  TemplateAst parse() {
    TemplateAst ast;
    ast.body = subparse({});
    if (cur().type != TokenType::Eof) fail("unexpected " + quoted(cur()));
    return ast;
  }

 private:
  // ---- token stream ----
  const Token& cur() const { return t_[pos_]; }
  const Token& look() const { return t_[std::min(pos_ + 1, t_.size() - 1)]; }
  const Token& next() {
    const Token& t = t_[pos_];
    if (pos_ + 1 < t_.size()) ++pos_;
    return t;
  }
  bool is_op(const char* op) const { return cur().type == TokenType::Operator && cur().text == op; }
  bool is_name(const char* n) const { return cur().type == TokenType::Name && cur().text == n; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  static std::string quoted(const Token& t) { return "'" + describe(t) + "'"; }
  [[noreturn]] void fail(const std::string& msg, int line = 0) const {
    raise(ErrorKind::Syntax, msg + " (line " + std::to_string(line ? line : cur().line) + ")");
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail(std::string("expected token '") + op + "', got " + quoted(cur()));
  }
  void expect_name(const char* n) {
    if (!skip_name(n)) fail(std::string("expected token '") + n + "', got " + quoted(cur()));
  }
  std::string expect_any_name() {
    if (cur().type != TokenType::Name) fail("expected token 'name', got " + quoted(cur()));
    return next().text;
  }
  void expect(TokenType type) {
    if (cur().type != type) {
      Token want;
      want.type = type;
      fail("expected token " + quoted(want) + ", got " + quoted(cur()));
    }
    next();
  }

  // ---- statements ----
  using EndTags = std::vector<std::string>;

  bool at_end_tag(const EndTags& ends) const {
    if (cur().type != TokenType::Name) return false;
    for (const auto& e : ends)
      if (cur().text == e) return true;
    return false;
  }

  Body subparse(const EndTags& ends) {
    Body body;
    std::unique_ptr<Stmt> output;
    auto flush = [&] {
      if (output) body.push_back(std::move(output));
    };
    auto out = [&]() -> Stmt& {
      if (!output) {
        output = std::make_unique<Stmt>();
        output->kind = StmtKind::Output;
        output->line = cur().line;
      }
      return *output;
    };
    while (cur().type != TokenType::Eof) {
      if (cur().type == TokenType::Data) {
        out().parts.push_back(OutputPart{next().text, nullptr});
      } else if (cur().type == TokenType::VariableBegin) {
        next();
        ExprPtr e = parse_tuple(false, true, {}, false, false);
        out().parts.push_back(OutputPart{"", std::move(e)});
        expect(TokenType::VariableEnd);
      } else if (cur().type == TokenType::BlockBegin) {
        flush();
        next();
        if (!ends.empty() && at_end_tag(ends)) return body;
        body.push_back(parse_statement());
        expect(TokenType::BlockEnd);
      } else {
        fail("unexpected " + quoted(cur()));
      }
    }
    flush();
    return body;
  }

  Body parse_statements(const EndTags& ends, bool drop_needle, const std::string& tag) {
    skip_op(":");
    expect(TokenType::BlockEnd);
    Body body = subparse(ends);
    if (cur().type == TokenType::Eof) {
      std::string want;
      for (size_t i = 0; i < ends.size(); ++i) want += (i ? " or '" : "'") + ends[i] + "'";
      fail("Unexpected end of template. Jinja was looking for the following tags: " + want +
           ". The innermost block that needs to be closed is '" + tag + "'.");
    }
    if (drop_needle) next();
    return body;
  }

  std::unique_ptr<Stmt> new_stmt(StmtKind kind) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = cur().line;
    return s;
  }

  std::unique_ptr<Stmt> parse_statement() {
    if (cur().type != TokenType::Name) fail("tag name expected");
    const std::string tag = cur().text;
    if (tag == "for") return parse_for();
    if (tag == "if") return parse_if();
    if (tag == "set") return parse_set();
    if (tag == "macro") return parse_macro();
    if (tag == "call") return parse_call_block();
    if (tag == "filter") return parse_filter_block();
    if (tag == "with") return parse_with();
    if (tag == "block") return parse_block();
    if (tag == "print") return parse_print();
    if (tag == "break" || tag == "continue") {
      auto s = new_stmt(tag == "break" ? StmtKind::Break : StmtKind::Continue);
      next();
      return s;
    }
    if (tag == "generation") {
      auto s = new_stmt(StmtKind::Generation);
      next();
      s->body = parse_statements({"endgeneration"}, true, tag);
      return s;
    }
    if (tag == "extends" || tag == "include" || tag == "import" || tag == "from")
      raise(ErrorKind::Unsupported, "'" + tag + "' needs a template loader, which chat templates do not have (line " +
                                        std::to_string(cur().line) + ")");
    if (tag == "autoescape") raise(ErrorKind::Unsupported, "'autoescape' blocks are not supported (line " + std::to_string(cur().line) + ")");
    fail("Encountered unknown tag '" + tag + "'.");
  }

  std::unique_ptr<Stmt> parse_for() {
    auto s = new_stmt(StmtKind::For);
    next();
    s->target = parse_assign_target(true, false, {"in"}, false);
    expect_name("in");
    s->expr = parse_tuple(false, false, {"recursive"}, false, false);
    if (skip_name("if")) s->cond = parse_expression(true);
    s->recursive = skip_name("recursive");
    s->body = parse_statements({"endfor", "else"}, false, "for");
    if (next().text != "endfor") s->else_body = parse_statements({"endfor"}, true, "for");
    return s;
  }

  std::unique_ptr<Stmt> parse_if() {
    auto s = new_stmt(StmtKind::If);
    next();
    while (true) {
      s->tests.push_back(parse_tuple(false, false, {}, false, false));
      s->bodies.push_back(parse_statements({"elif", "else", "endif"}, false, "if"));
      const std::string tok = next().text;
      if (tok == "elif") continue;
      if (tok == "else") s->else_body = parse_statements({"endif"}, true, "if");
      break;
    }
    return s;
  }

  std::unique_ptr<Stmt> parse_set() {
    auto s = new_stmt(StmtKind::Set);
    next();
    s->target = parse_assign_target(true, false, {}, true);
    if (skip_op("=")) {
      s->expr = parse_tuple(false, true, {}, false, false);
      return s;
    }
    s->kind = StmtKind::SetBlock;
    s->expr = parse_filter(nullptr, false);
    s->body = parse_statements({"endset"}, true, "set");
    return s;
  }

  void parse_signature(Stmt& s) {
    expect_op("(");
    while (!is_op(")")) {
      if (!s.params.empty()) expect_op(",");
      Param p;
      p.name = expect_any_name();
      if (skip_op("="))
        p.default_value = parse_expression(true);
      else if (!s.params.empty() && s.params.back().default_value)
        fail("non-default argument follows default argument");
      s.params.push_back(std::move(p));
    }
    expect_op(")");
  }

  void note_special_names(Stmt& s) {
    s.uses_varargs = body_reads(s.body, "varargs");
    s.uses_kwargs = body_reads(s.body, "kwargs");
    s.uses_caller = body_reads(s.body, "caller");
  }

  std::unique_ptr<Stmt> parse_macro() {
    auto s = new_stmt(StmtKind::Macro);
    next();
    s->name = expect_any_name();
    parse_signature(*s);
    s->body = parse_statements({"endmacro"}, true, "macro");
    note_special_names(*s);
    return s;
  }

  std::unique_ptr<Stmt> parse_call_block() {
    auto s = new_stmt(StmtKind::CallBlock);
    next();
    if (is_op("(")) parse_signature(*s);
    s->expr = parse_expression(true);
    if (s->expr->kind != ExprKind::Call) fail("expected call", s->line);
    s->body = parse_statements({"endcall"}, true, "call");
    note_special_names(*s);
    return s;
  }

  std::unique_ptr<Stmt> parse_filter_block() {
    auto s = new_stmt(StmtKind::FilterBlock);
    next();
    s->expr = parse_filter(nullptr, true);
    s->body = parse_statements({"endfilter"}, true, "filter");
    return s;
  }

  std::unique_ptr<Stmt> parse_with() {
    auto s = new_stmt(StmtKind::With);
    next();
    while (cur().type != TokenType::BlockEnd) {
      if (!s->targets.empty()) expect_op(",");
      s->targets.push_back(parse_assign_target(true, false, {}, false));
      expect_op("=");
      s->values.push_back(parse_expression(true));
    }
    s->body = parse_statements({"endwith"}, true, "with");
    return s;
  }

  std::unique_ptr<Stmt> parse_block() {
    auto s = new_stmt(StmtKind::Block);
    next();
    s->name = expect_any_name();
    skip_name("scoped");
    skip_name("required");
    s->body = parse_statements({"endblock"}, true, "block");
    skip_name(s->name.c_str());
    return s;
  }

  std::unique_ptr<Stmt> parse_print() {
    auto s = new_stmt(StmtKind::Output);
    next();
    while (cur().type != TokenType::BlockEnd) {
      if (!s->parts.empty()) expect_op(",");
      s->parts.push_back(OutputPart{"", parse_expression(true)});
    }
    return s;
  }

  // ---- assignment targets ----
  Target to_target(const Expr& e) {
    Target t;
    if (e.kind == ExprKind::Name) {
      if (e.name == "true" || e.name == "false" || e.name == "none" || e.name == "True" || e.name == "False" ||
          e.name == "None")
        fail("can't assign to 'const'", e.line);
      t.name = e.name;
      return t;
    }
    if (e.kind == ExprKind::Getattr && e.ns_ref) {
      t.kind = Target::Kind::NsRef;
      t.name = e.a->name;
      t.attr = e.name;
      return t;
    }
    if (e.kind == ExprKind::Tuple) {
      t.kind = Target::Kind::Tuple;
      for (const auto& x : e.items) t.items.push_back(to_target(*x));
      return t;
    }
    fail("can't assign to '" + std::string(e.kind == ExprKind::Const ? "const" : "expression") + "'", e.line);
  }

  Target parse_assign_target(bool with_tuple, bool name_only, const EndTags& extra_end, bool with_namespace) {
    if (name_only) {
      Target t;
      t.name = expect_any_name();
      return t;
    }
    ExprPtr e = with_tuple ? parse_tuple(true, true, extra_end, false, with_namespace) : parse_primary(with_namespace);
    if (e->kind == ExprKind::Getattr && !with_namespace) fail("can't assign to 'getattr'", e->line);
    return to_target(*e);
  }

  // ---- expressions ----
  bool is_tuple_end(const EndTags& extra_end) const {
    if (cur().type == TokenType::VariableEnd || cur().type == TokenType::BlockEnd || is_op(")")) return true;
    return at_end_tag(extra_end);
  }

  ExprPtr parse_tuple(bool simplified, bool with_condexpr, const EndTags& extra_end, bool explicit_parens,
                      bool with_namespace) {
    const int line = cur().line;
    std::vector<ExprPtr> args;
    bool is_tuple = false;
    while (true) {
      if (!args.empty()) expect_op(",");
      if (is_tuple_end(extra_end)) break;
      args.push_back(simplified ? parse_primary(with_namespace) : parse_expression(with_condexpr));
      if (is_op(","))
        is_tuple = true;
      else
        break;
    }
    if (!is_tuple) {
      if (!args.empty()) return std::move(args[0]);
      if (!explicit_parens) fail("Expected an expression, got " + quoted(cur()));
    }
    auto t = make(ExprKind::Tuple, line);
    t->items = std::move(args);
    return t;
  }

  ExprPtr parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

  ExprPtr parse_condexpr() {
    ExprPtr expr1 = parse_or();
    while (is_name("if")) {
      const int line = next().line;
      auto c = make(ExprKind::CondExpr, line);
      c->a = parse_or();
      c->b = std::move(expr1);
      if (skip_name("else")) c->c = parse_condexpr();
      expr1 = std::move(c);
    }
    return expr1;
  }

  ExprPtr binary(ExprKind kind, ExprPtr l, ExprPtr r, int line) {
    auto e = make(kind, line);
    e->a = std::move(l);
    e->b = std::move(r);
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      const int line = next().line;
      left = binary(ExprKind::Or, std::move(left), parse_and(), line);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      const int line = next().line;
      left = binary(ExprKind::And, std::move(left), parse_not(), line);
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      auto e = make(ExprKind::Not, next().line);
      e->a = parse_not();
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = cur().line;
    ExprPtr expr = parse_math1();
    std::vector<std::pair<CmpOp, ExprPtr>> ops;
    while (true) {
      static const std::pair<const char*, CmpOp> kOps[] = {{"==", CmpOp::Eq}, {"!=", CmpOp::Ne}, {"<", CmpOp::Lt},
                                                           {"<=", CmpOp::Le}, {">", CmpOp::Gt},  {">=", CmpOp::Ge}};
      bool matched = false;
      for (const auto& [text, op] : kOps)
        if (is_op(text)) {
          next();
          ops.emplace_back(op, parse_math1());
          matched = true;
          break;
        }
      if (matched) continue;
      if (skip_name("in")) {
        ops.emplace_back(CmpOp::In, parse_math1());
      } else if (is_name("not") && look().type == TokenType::Name && look().text == "in") {
        next();
        next();
        ops.emplace_back(CmpOp::NotIn, parse_math1());
      } else {
        break;
      }
    }
    if (ops.empty()) return expr;
    auto c = make(ExprKind::Compare, line);
    c->a = std::move(expr);
    c->compares = std::move(ops);
    return c;
  }

  ExprPtr math(BinOp op, ExprPtr l, ExprPtr r, int line) {
    auto e = binary(ExprKind::Binary, std::move(l), std::move(r), line);
    e->op = op;
    return e;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const BinOp op = cur().text == "+" ? BinOp::Add : BinOp::Sub;
      const int line = next().line;
      left = math(op, std::move(left), parse_concat(), line);
    }
    return left;
  }

  ExprPtr parse_concat() {
    const int line = cur().line;
    std::vector<ExprPtr> args;
    args.push_back(parse_math2());
    while (skip_op("~")) args.push_back(parse_math2());
    if (args.size() == 1) return std::move(args[0]);
    auto c = make(ExprKind::Concat, line);
    c->items = std::move(args);
    return c;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string t = cur().text;
      const BinOp op = t == "*" ? BinOp::Mul : t == "/" ? BinOp::Div : t == "//" ? BinOp::FloorDiv : BinOp::Mod;
      const int line = next().line;
      left = math(op, std::move(left), parse_pow(), line);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      const int line = next().line;
      left = math(BinOp::Pow, std::move(left), parse_unary(true), line);
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      const ExprKind kind = cur().text == "-" ? ExprKind::Neg : ExprKind::Pos;
      node = make(kind, next().line);
      node->a = parse_unary(false);
    } else {
      node = parse_primary(false);
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary(bool with_namespace) {
    const Token& tok = cur();
    const int line = tok.line;
    if (tok.type == TokenType::Name) {
      const std::string n = next().text;
      auto e = make(ExprKind::Const, line);
      if (n == "true" || n == "True" || n == "false" || n == "False") {
        e->value = Value(n == "true" || n == "True");
      } else if (n == "none" || n == "None") {
        e->value = Value::none();
      } else if (with_namespace && is_op(".")) {
        next();
        e->kind = ExprKind::Getattr;
        e->ns_ref = true;
        e->a = make(ExprKind::Name, line);
        e->a->name = n;
        e->name = expect_any_name();
      } else {
        e->kind = ExprKind::Name;
        e->name = n;
      }
      return e;
    }
    if (tok.type == TokenType::String) {
      std::string s;
      while (cur().type == TokenType::String) s += next().text;
      auto e = make(ExprKind::Const, line);
      e->value = Value(s);
      return e;
    }
    if (tok.type == TokenType::Integer || tok.type == TokenType::Float) {
      auto e = make(ExprKind::Const, line);
      e->value = tok.type == TokenType::Integer ? Value(tok.int_value) : Value(tok.float_value);
      next();
      return e;
    }
    if (is_op("(")) {
      next();
      ExprPtr e = parse_tuple(false, true, {}, true, false);
      expect_op(")");
      return e;
    }
    if (is_op("[")) return parse_list();
    if (is_op("{")) return parse_dict();
    fail("unexpected " + quoted(tok));
  }

  ExprPtr parse_list() {
    auto e = make(ExprKind::List, cur().line);
    expect_op("[");
    while (!is_op("]")) {
      if (!e->items.empty()) expect_op(",");
      if (is_op("]")) break;
      e->items.push_back(parse_expression(true));
    }
    expect_op("]");
    return e;
  }

  ExprPtr parse_dict() {
    auto e = make(ExprKind::Dict, cur().line);
    expect_op("{");
    while (!is_op("}")) {
      if (!e->items.empty()) expect_op(",");
      if (is_op("}")) break;
      e->items.push_back(parse_expression(true));
      expect_op(":");
      e->items.push_back(parse_expression(true));
    }
    expect_op("}");
    return e;
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".") || is_op("["))
        node = parse_subscript(std::move(node));
      else if (is_op("("))
        node = parse_call(std::move(node));
      else
        return node;
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|"))
        node = parse_filter(std::move(node), false);
      else if (is_name("is"))
        node = parse_test(std::move(node));
      else if (is_op("("))
        node = parse_call(std::move(node));
      else
        return node;
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const Token tok = next();
    if (tok.text == ".") {
      const Token attr = next();
      if (attr.type == TokenType::Name) {
        auto e = make(ExprKind::Getattr, tok.line);
        e->a = std::move(node);
        e->name = attr.text;
        return e;
      }
      if (attr.type != TokenType::Integer) fail("expected name or number", attr.line);
      auto e = make(ExprKind::Getitem, tok.line);
      e->a = std::move(node);
      e->b = make(ExprKind::Const, attr.line);
      e->b->value = Value(attr.int_value);
      return e;
    }
    std::vector<ExprPtr> args;
    while (!is_op("]")) {
      if (!args.empty()) expect_op(",");
      args.push_back(parse_subscribed());
    }
    expect_op("]");
    auto e = make(ExprKind::Getitem, tok.line);
    e->a = std::move(node);
    if (args.size() == 1) {
      e->b = std::move(args[0]);
    } else {
      e->b = make(ExprKind::Tuple, tok.line);
      e->b->items = std::move(args);
    }
    return e;
  }

  ExprPtr parse_subscribed() {
    const int line = cur().line;
    auto slice = make(ExprKind::Slice, line);
    if (is_op(":")) {
      next();
    } else {
      ExprPtr node = parse_expression(true);
      if (!is_op(":")) return node;
      next();
      slice->a = std::move(node);
    }
    if (!is_op(":") && !is_op("]") && !is_op(",")) slice->b = parse_expression(true);
    if (is_op(":")) {
      next();
      if (!is_op("]") && !is_op(",")) slice->c = parse_expression(true);
    }
    return slice;
  }

  void parse_call_args(Expr& e) {
    const int line = cur().line;
    expect_op("(");
    bool require_comma = false;
    auto ensure = [&](bool ok) {
      if (!ok) fail("invalid syntax for function call expression", line);
    };
    while (!is_op(")")) {
      if (require_comma) {
        expect_op(",");
        if (is_op(")")) break;
      }
      if (is_op("*")) {
        ensure(!e.dyn_args && !e.dyn_kwargs);
        next();
        e.dyn_args = parse_expression(true);
      } else if (is_op("**")) {
        ensure(!e.dyn_kwargs);
        next();
        e.dyn_kwargs = parse_expression(true);
      } else if (cur().type == TokenType::Name && look().type == TokenType::Operator && look().text == "=") {
        ensure(!e.dyn_kwargs);
        std::string key = next().text;
        next();
        e.kwargs.emplace_back(key, parse_expression(true));
      } else {
        ensure(!e.dyn_args && !e.dyn_kwargs && e.kwargs.empty());
        e.items.push_back(parse_expression(true));
      }
      require_comma = true;
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr node) {
    auto e = make(ExprKind::Call, cur().line);
    e->a = std::move(node);
    parse_call_args(*e);
    return e;
  }

  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
    while (is_op("|") || start_inline) {
      if (!start_inline) next();
      start_inline = false;
      auto e = make(ExprKind::Filter, cur().line);
      e->name = expect_any_name();
      while (skip_op(".")) e->name += "." + expect_any_name();
      if (is_op("(")) parse_call_args(*e);
      e->a = std::move(node);
      node = std::move(e);
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    const int line = next().line;
    const bool negated = skip_name("not");
    auto e = make(ExprKind::Test, line);
    e->name = expect_any_name();
    while (skip_op(".")) e->name += "." + expect_any_name();
    const TokenType ty = cur().type;
    if (is_op("(")) {
      parse_call_args(*e);
    } else if ((ty == TokenType::Name || ty == TokenType::String || ty == TokenType::Integer ||
                ty == TokenType::Float || is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail("You cannot chain multiple tests with is");
      e->items.push_back(parse_postfix(parse_primary(false)));
    }
    e->a = std::move(node);
    if (!negated) return e;
    auto n = make(ExprKind::Not, line);
    n->a = std::move(e);
    return n;
  }

  std::vector<Token> t_;
  size_t pos_ = 0;
};

}  // namespace

TemplateAst parse_template(const std::string& source, const LexerOptions& options) {
  return Parser(tokenize(source, options)).parse();
}

}  // namespace rlf::jinja
