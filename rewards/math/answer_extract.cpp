#include "rewards/math/answer_extract.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "rewards/math/ascii.h"
#include "rewards/math/latex_normalize.h"
#include "util/error.h"

namespace rlf::math {
namespace {


std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::optional<std::string> non_empty(std::string s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  return s;
}

std::optional<std::string> extract_gsm8k(std::string_view text) {
  size_t j = text.rfind("####");
  if (j == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(j + 4);
  size_t eol = rest.find('\n');
  return non_empty(std::string(rest.substr(0, eol)));
}

// The end of the sentence starting at `s`: a '.' not followed by a digit, or
// a newline.
std::string up_to_sentence_end(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n') return std::string(s.substr(0, i));
    if (s[i] == '.' && !(i + 1 < s.size() && is_digit(s[i + 1]))) return std::string(s.substr(0, i));
  }
  return std::string(s);
}

std::optional<std::string> extract_answer_is(std::string_view text) {
  std::string low = lower(text);
  size_t best = std::string::npos, best_end = 0;
  for (std::string_view cue : {"answer is", "answer:", "answer would be", "answer should be"}) {
    size_t j = low.rfind(cue);
    if (j != std::string::npos && (best == std::string::npos || j > best)) {
      best = j;
      best_end = j + cue.size();
    }
  }
  if (best == std::string::npos) return std::nullopt;
  std::string_view rest = text.substr(best_end);
  size_t k = 0;
  while (k < rest.size() && (rest[k] == ' ' || rest[k] == ':' || rest[k] == '*')) ++k;
  // Markdown bold around the answer: "**42**".
  std::string_view tail = rest.substr(k);
  if (k > 0 && rest[k - 1] == '*') {
    size_t close = tail.find("**");
    if (close != std::string_view::npos) return non_empty(std::string(tail.substr(0, close)));
  }
  rest = rest.substr(k);
  if (auto boxed = extract_boxed(rest)) return boxed;
  // A math span: $...$, $$...$$, \(...\), \[...\].
  for (auto [open, close] : {std::pair<std::string_view, std::string_view>{"$$", "$$"}, {"\\(", "\\)"}, {"\\[", "\\]"}, {"$", "$"}}) {
    if (rest.substr(0, open.size()) == open) {
      size_t end = rest.find(close, open.size());
      while (open == "$" && end != std::string_view::npos && rest[end - 1] == '\\') end = rest.find(close, end + 1);  // "\\$" is a dollar sign
      if (end != std::string_view::npos) {
        std::string inner(rest.substr(open.size(), end - open.size()));
        // "$18.00. Next sentence $x$": a currency sign, not a math span.
        std::string sentence = up_to_sentence_end(rest.substr(open.size()));
        if (open == "$" && sentence.size() + 1 < inner.size()) return non_empty(sentence);
        return non_empty(inner);
      }
      return non_empty(up_to_sentence_end(rest));
    }
  }
  return non_empty(up_to_sentence_end(rest));
}

// A whole text that is just an answer ("\\frac{1}{2}", "x = 5", "even"):
// one short line whose words (after dropping LaTeX commands and the insides
// of \\text{}, \\begin{}, \\end{}) include no prose. A prose word is a run
// of two or more letters standing alone between spaces ("so 5", "12 apples");
// a single word alone is an answer ("even").
bool looks_like_bare_answer(std::string_view text) {
  std::string t = trim(text);
  if (t.empty() || t.size() > 300 || t.find('\n') != std::string::npos) return false;
  std::string kept;
  for (size_t i = 0; i < t.size();) {
    if (t[i] == '\\') {
      size_t start = ++i;
      while (i < t.size() && is_alpha(t[i])) ++i;
      std::string_view name = std::string_view(t).substr(start, i - start);
      if (name == "begin" || name == "end" || name == "text" || name == "mbox" || name == "textbf" || name == "mathrm") {
        while (i < t.size() && t[i] == ' ') ++i;
        size_t close = i < t.size() && t[i] == '{' ? matching_brace(t, i) : std::string::npos;
        if (close != std::string::npos) i = close + 1;
      }
      kept += ' ';
      continue;
    }
    kept += t[i++];
  }
  static const std::string_view math_words[] = {"sin", "cos", "tan", "cot", "sec", "csc", "log", "ln", "exp", "sqrt", "pi"};
  size_t n_tokens = 0, n_words = 0;
  size_t i = 0;
  while (i < kept.size()) {
    while (i < kept.size() && std::isspace(static_cast<unsigned char>(kept[i]))) ++i;
    size_t start = i;
    while (i < kept.size() && !std::isspace(static_cast<unsigned char>(kept[i]))) ++i;
    if (i == start) break;
    std::string token = lower(std::string_view(kept).substr(start, i - start));
    ++n_tokens;
    while (!token.empty() && std::string_view("{}()[].,;:!?*\"'").find(token.back()) != std::string_view::npos) token.pop_back();
    while (!token.empty() && std::string_view("{}()[]*\"'").find(token.front()) != std::string_view::npos) token.erase(0, 1);
    bool all_alpha = token.size() >= 2 && std::all_of(token.begin(), token.end(), [](char c) { return is_alpha(c); });
    bool math_word = std::find(std::begin(math_words), std::end(math_words), token) != std::end(math_words);
    if (all_alpha && !math_word) ++n_words;
  }
  return n_words == 0 || n_tokens == 1;
}

}  // namespace

std::string_view format_name(AnswerFormat format) {
  switch (format) {
    case AnswerFormat::Auto: return "auto";
    case AnswerFormat::Boxed: return "boxed";
    case AnswerFormat::Gsm8k: return "gsm8k";
    case AnswerFormat::AnswerIs: return "answer-is";
    case AnswerFormat::LastNumber: return "last-number";
  }
  return "auto";
}

AnswerFormat parse_answer_format(std::string_view name) {
  for (AnswerFormat f : {AnswerFormat::Auto, AnswerFormat::Boxed, AnswerFormat::Gsm8k, AnswerFormat::AnswerIs, AnswerFormat::LastNumber}) {
    if (format_name(f) == name) return f;
  }
  fail("unknown answer format '", name, "': expected one of auto, boxed, gsm8k, answer-is, last-number");
}

std::optional<std::string> extract_boxed(std::string_view text) {
  size_t best = std::string_view::npos, best_len = 0;
  for (std::string_view cmd : {"\\boxed", "\\fbox"}) {
    size_t j = text.rfind(cmd);
    while (j != std::string_view::npos && j + cmd.size() < text.size() && is_alpha(text[j + cmd.size()])) {
      j = j == 0 ? std::string_view::npos : text.rfind(cmd, j - 1);
    }
    if (j != std::string_view::npos && (best == std::string_view::npos || j > best)) {
      best = j;
      best_len = cmd.size();
    }
  }
  if (best == std::string_view::npos) return std::nullopt;
  size_t k = best + best_len;
  while (k < text.size() && text[k] == ' ') ++k;
  if (k < text.size() && text[k] == '{') {
    size_t close = matching_brace(text, k);
    if (close == std::string_view::npos) return std::nullopt;
    return non_empty(std::string(text.substr(k + 1, close - k - 1)));
  }
  // "\boxed 5": up to the next space or '$'.
  size_t end = k;
  while (end < text.size() && text[end] != '$' && !std::isspace(static_cast<unsigned char>(text[end]))) ++end;
  return non_empty(std::string(text.substr(k, end - k)));
}

std::optional<std::string> extract_last_number(std::string_view text) {
  // Scan backwards for the last digit, then expand to the whole number.
  size_t i = text.size();
  while (i > 0 && !is_digit(text[i - 1])) --i;
  if (i == 0) return std::nullopt;
  size_t end = i;
  size_t start = end;
  while (start > 0) {
    char c = text[start - 1];
    if (is_digit(c)) {
      --start;
    } else if ((c == ',' || c == '.') && start >= 2 && is_digit(text[start - 2])) {
      --start;
    } else {
      break;
    }
  }
  if (start > 0 && text[start - 1] == '.') --start;  // ".5"
  std::string number;
  for (size_t k = start; k < end; ++k) {
    if (text[k] != ',') number += text[k];
  }
  // Keep only the last decimal point ("1.2.3" is not a number: take "2.3").
  size_t first_dot = number.find('.');
  if (first_dot != std::string::npos && number.find('.', first_dot + 1) != std::string::npos) {
    number = number.substr(number.rfind('.', number.rfind('.') - 1) + 1);
  }
  if (start > 0 && text[start - 1] == '-') number = "-" + number;
  return number;
}

std::optional<std::string> extract_answer(std::string_view text, AnswerFormat format) {
  switch (format) {
    case AnswerFormat::Boxed: return extract_boxed(text);
    case AnswerFormat::Gsm8k: return extract_gsm8k(text);
    case AnswerFormat::AnswerIs: return extract_answer_is(text);
    case AnswerFormat::LastNumber: return extract_last_number(text);
    case AnswerFormat::Auto: break;
  }
  if (auto a = extract_boxed(text)) return a;
  if (auto a = extract_gsm8k(text)) return a;
  if (auto a = extract_answer_is(text)) return a;
  if (looks_like_bare_answer(text)) return trim(text);
  return extract_last_number(text);
}

}  // namespace rlf::math
