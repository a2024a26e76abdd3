// The Jinja parser: tokens (lexer.h) to a syntax tree (ast.h), following
// jinja2's grammar and operator precedence, with the statements transformers'
// environment enables: the built-in ones, `break`/`continue` (loopcontrols)
// and `generation` (transformers' AssistantTracker). `extends`, `include`,
// `import` and `from` need a template loader, which chat templates do not
// have: they are errors, as they are in transformers.
#pragma once

#include <string>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/lexer.h"

namespace rlf::jinja {

// Parses a template; throws jinja::Error (Syntax) naming the line.
TemplateAst parse_template(const std::string& source, const LexerOptions& options = {});

}  // namespace rlf::jinja
