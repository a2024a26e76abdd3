// The Jinja lexer, with jinja2's whitespace rules as transformers configures
// them: trim_blocks (the first newline after a block or comment tag is
// dropped), lstrip_blocks (spaces and tabs before a block or comment tag at
// the start of a line are dropped), `-`/`+` whitespace control on every tag,
// keep_trailing_newline off (one trailing newline of the template is dropped),
// \r\n and \r read as \n. Comments disappear; {% raw %} bodies become data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rlf::jinja {

enum class TokenType { Data, VariableBegin, VariableEnd, BlockBegin, BlockEnd, Name, String, Integer, Float, Operator, Eof };

struct Token {
  TokenType type = TokenType::Eof;
  std::string text;  // data text, name, operator, or the decoded string literal
  int64_t int_value = 0;
  double float_value = 0.0;
  int line = 1;
};

struct LexerOptions {
  bool trim_blocks = true;             // transformers: True
  bool lstrip_blocks = true;           // transformers: True
  bool keep_trailing_newline = false;  // jinja2's default
};

// Tokenizes `source`; throws jinja::Error (Syntax) naming the line.
std::vector<Token> tokenize(const std::string& source, const LexerOptions& options = {});

// A token for messages: "end of template", "'name'", ...
std::string describe(const Token& t);

}  // namespace rlf::jinja
