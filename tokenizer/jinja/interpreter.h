// Runs a parsed template (ast.h) as jinja2's ImmutableSandboxedEnvironment
// runs it: jinja2's scoping (a `for` iteration and a macro call are scopes of
// their own, `if` is not; namespaces carry values out of loops), attribute and
// item lookup with the sandbox's rules (mutating methods are blocked), Python
// operators, the built-in filters and tests (builtins.h), and transformers'
// {% generation %} spans.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/operators.h"
#include "tokenizer/jinja/value.h"

namespace rlf::jinja {

// A span of rendered text written inside {% generation %} ... {% endgeneration %},
// in bytes of the output. As in transformers, `begin` is the length of the
// top-level output when the block ends (which is where its text goes unless
// the block sits inside a macro or a `set` block).
struct GenerationSpan {
  size_t begin = 0;
  size_t end = 0;
};

struct Frame {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Frame> parent;  // null: the template's root frame (globals below it)
};

struct InterpreterOptions {
  // transformers 4.x records a {% generation %} span only once the template
  // has output something (its tracker tests its lists for emptiness); 5.x
  // always records. Default: 5.x.
  bool generation_after_output_only = false;
};

class Interpreter {
 public:
  // `globals` are the names every frame falls back to (range, namespace, ...
  // and the render's variables).
  explicit Interpreter(std::unordered_map<std::string, Value> globals, InterpreterOptions options = {});
  // Breaks the reference cycles a render leaves (a macro holds the frame it
  // was defined in, which holds the macro).
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Renders `ast`; throws jinja::Error.
  std::string render(const TemplateAst& ast);
  const std::vector<GenerationSpan>& generation_spans() const { return spans_; }

  // Operations the builtins share with the evaluator.
  Value call(const Value& callee, CallArgs args);
  Value filter(const std::string& name, const Value& subject, CallArgs args, int line);
  bool test(const std::string& name, const Value& subject, CallArgs args, int line);

  // Runs `body` with `frame` as its scope and returns what it printed
  // (macros and callers).
  std::string render_scope(const Body& body, std::shared_ptr<Frame> frame);
  // Evaluates `e` with `frame` as its scope (macro parameter defaults).
  Value eval_in(const Expr& e, std::shared_ptr<Frame> frame);

 private:
  enum class Flow { Normal, Break, Continue };

  Flow exec_body(const Body& body);
  Flow exec(const Stmt& s);
  Flow exec_if(const Stmt& s);
  Flow exec_for(const Stmt& s);
  void exec_output(const Stmt& s);
  void exec_macro(const Stmt& s);
  void exec_call_block(const Stmt& s);
  void exec_with(const Stmt& s);
  void exec_generation(const Stmt& s);
  std::string capture(const Body& body);
  void emit(const std::string& text);  // to the current buffer; counts jinja2's top-level yields

  Value eval(const Expr& e);
  Value eval_call(const Expr& e);
  Value eval_compare(const Expr& e);
  CallArgs eval_args(const Expr& e, size_t skip_items = 0);
  Value apply_filter_chain(const Expr& filter, const Value& subject);  // `set` and filter blocks
  Value lookup(const std::string& name) const;
  void assign(const Target& t, const Value& v);

  std::unordered_map<std::string, Value> globals_;
  InterpreterOptions options_;
  size_t n_top_level_yields_ = 0;
  std::shared_ptr<Frame> frame_;
  std::vector<std::string> out_;  // output buffers: [0] is the top level
  std::vector<GenerationSpan> spans_;
  int depth_ = 0;                 // macro call depth (a bound on runaway recursion)
  std::vector<std::weak_ptr<Frame>> closures_;  // frames that macros closed over
};

}  // namespace rlf::jinja
