#include "rewards/math/latex_normalize.h"

#include <cctype>
#include <initializer_list>
#include <utility>

#include "rewards/math/ascii.h"

namespace rlf::math {
namespace {


void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (true) {
    size_t j = s.find(from, i);
    if (j == std::string::npos) break;
    out.append(s, i, j - i);
    out.append(to);
    i = j + from.size();
  }
  out.append(s, i, std::string::npos);
  s = std::move(out);
}

// Replaces the LaTeX command `\name` only where it is not the prefix of a
// longer command name ("\left" but not "\leftarrow").
void replace_command(std::string& s, std::string_view name, std::string_view to) {
  std::string pattern(1, '\\');
  pattern += name;
  std::string out;
  size_t i = 0;
  while (true) {
    size_t j = s.find(pattern, i);
    if (j == std::string::npos) break;
    size_t end = j + pattern.size();
    out.append(s, i, j - i);
    if (end < s.size() && is_alpha(s[end])) {
      out.append(pattern);
    } else {
      out.append(to);
    }
    i = end;
  }
  out.append(s, i, std::string::npos);
  s = std::move(out);
}

// Spacing commands \\! \\, \\; \\: "\\ " and ~ become a space; a row break
// "\\\\" is kept.
void replace_spacing(std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      char c = s[i + 1];
      if (c == '\\') {
        out += "\\\\";
        ++i;
        continue;
      }
      if (c == '!' || c == ',' || c == ';' || c == ':' || c == ' ') {
        out += ' ';
        ++i;
        continue;
      }
    }
    out += s[i] == '~' ? ' ' : s[i];
  }
  s = std::move(out);
}

// Text-like wrappers: \text{...} and friends.
constexpr std::string_view kTextCommands[] = {"\\text", "\\textbf", "\\textrm", "\\textit", "\\mbox", "\\textnormal"};
// Font wrappers around math ("\mathrm{cm}", "\mathbf{v}"): unwrapped.
constexpr std::string_view kFontCommands[] = {"\\mathrm", "\\mathbf", "\\mathit", "\\operatorname", "\\mathsf",
                                              "\\boldsymbol", "\\mathnormal", "\\bm"};

// Finds `\cmd{` where cmd is exactly `command` (not a longer name).
size_t find_command_group(const std::string& s, std::string_view command, size_t from) {
  while (true) {
    size_t j = s.find(command, from);
    if (j == std::string::npos) return j;
    size_t k = j + command.size();
    while (k < s.size() && s[k] == ' ') ++k;
    if (k < s.size() && s[k] == '{' && !(j + command.size() < s.size() && is_alpha(s[j + command.size()]))) return j;
    from = j + 1;
  }
}

// \text{...}: the whole answer -> its contents; "and"/"or" -> ","; after
// other content (a unit: "5\text{ cm}^2") -> removed with a trailing ^n.
void handle_text_commands(std::string& s) {
  for (int guard = 0; guard < 64; ++guard) {
    size_t best = std::string::npos;
    std::string_view cmd;
    for (std::string_view c : kTextCommands) {
      size_t j = find_command_group(s, c, 0);
      if (j < best) {
        best = j;
        cmd = c;
      }
    }
    if (best == std::string::npos) return;
    size_t open = s.find('{', best + cmd.size());
    size_t close = matching_brace(s, open);
    if (close == std::string::npos) return;
    std::string inner = trim(std::string_view(s).substr(open + 1, close - open - 1));
    std::string before = trim(std::string_view(s).substr(0, best));
    std::string after = trim(std::string_view(s).substr(close + 1));
    std::string replacement;
    if (inner == "and" || inner == "or" || inner == "," || inner == ", and") {
      replacement.assign(1, ',');
    } else if (before.empty() || before.back() == ',' || before.back() == '=' || before.back() == '(') {
      replacement = inner;  // the answer itself (a word, a choice "(A)")
    } else {
      // A unit after a value; also drop its power ("\mbox{ inches}^2").
      size_t end = close + 1;
      if (end < s.size() && s[end] == '^') {
        size_t k = end + 1;
        if (k < s.size() && s[k] == '{') {
          size_t c2 = matching_brace(s, k);
          if (c2 != std::string::npos) end = c2 + 1;
        } else if (k < s.size()) {
          end = k + 1;
        }
      }
      std::string rebuilt = s.substr(0, best);
      rebuilt.append(" ").append(s, end, std::string::npos);
      s = std::move(rebuilt);
      continue;
    }
    std::string rebuilt = s.substr(0, best);
    rebuilt.append(" ").append(replacement).append(" ").append(s, close + 1, std::string::npos);
    s = std::move(rebuilt);
  }
}

void unwrap_font_commands(std::string& s) {
  for (std::string_view cmd : kFontCommands) {
    for (int guard = 0; guard < 64; ++guard) {
      size_t j = find_command_group(s, cmd, 0);
      if (j == std::string::npos) break;
      size_t open = s.find('{', j + cmd.size());
      size_t close = matching_brace(s, open);
      if (close == std::string::npos) break;
      s = s.substr(0, j) + s.substr(open + 1, close - open - 1) + s.substr(close + 1);
    }
  }
}

// "1,000", "-12,345.5": a whole answer that is one number with comma
// thousands separators.
bool is_grouped_number(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  size_t start = i;
  while (i < s.size() && is_digit(s[i])) ++i;
  size_t lead = i - start;
  if (lead < 1 || lead > 3 || i >= s.size() || s[i] != ',') return false;
  while (i < s.size() && s[i] == ',') {
    ++i;
    for (int k = 0; k < 3; ++k, ++i) {
      if (i >= s.size() || !is_digit(s[i])) return false;
    }
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (i >= s.size()) return true;
    while (i < s.size() && is_digit(s[i])) ++i;
  }
  return i == s.size();
}

std::string remove_char(std::string_view s, char c) {
  std::string out;
  for (char ch : s) {
    if (ch != c) out += ch;
  }
  return out;
}

// Plain-text unit words after a number: "18 dollars", "5 square feet".
bool is_unit_word(std::string_view w) {
  static const std::initializer_list<std::string_view> keep = {"pi", "sqrt", "sin", "cos", "tan", "log", "ln", "exp", "i", "e"};
  if (w.size() < 2) return false;
  for (std::string_view k : keep) {
    if (w == k) return false;
  }
  for (char c : w) {
    if (!is_alpha(c)) return false;
  }
  return true;
}

void strip_trailing_unit_words(std::string& s) {
  for (int guard = 0; guard < 8; ++guard) {
    size_t sp = s.find_last_of(' ');
    if (sp == std::string::npos) return;
    std::string_view word = std::string_view(s).substr(sp + 1);
    std::string before = trim(std::string_view(s).substr(0, sp));
    if (before.empty() || !is_unit_word(word)) return;
    char last = before.back();
    bool after_value = is_digit(last) || last == '}' || last == ')';
    if (!after_value && !(is_unit_word(std::string_view(before).substr(before.find_last_of(' ') == std::string::npos ? 0 : before.find_last_of(' ') + 1)))) return;
    s = before;
  }
}

}  // namespace

std::string trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && is_space(s[a])) ++a;
  while (b > a && is_space(s[b - 1])) --b;
  return std::string(s.substr(a, b - a));
}

size_t matching_brace(std::string_view text, size_t open) {
  if (open >= text.size() || text[open] != '{') return std::string_view::npos;
  int depth = 0;
  for (size_t i = open; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && (text[i + 1] == '{' || text[i + 1] == '}')) {
      ++i;  // \{ and \} are literal braces
      continue;
    }
    if (text[i] == '{') ++depth;
    if (text[i] == '}' && --depth == 0) return i;
  }
  return std::string_view::npos;
}

std::string normalize_answer(std::string_view answer) {
  std::string s(answer);
  // Unicode spellings.
  static const std::pair<std::string_view, std::string_view> unicode[] = {
      {"\u2212", "-"}, {"\u00d7", "\\times "}, {"\u00b7", "\\cdot "}, {"\u22c5", "\\cdot "}, {"\u00f7", "\\div "},
      {"\u03c0", "\\pi "}, {"\u221e", "\\infty "}, {"\u221a", "\\sqrt"}, {"\u00b0", ""}, {"\u00a0", " "},
      {"\u2013", "-"}, {"\u222a", "\\cup "}, {"\u00b1", "\\pm "}};
  for (auto [from, to] : unicode) replace_all(s, from, to);
  for (char& c : s) {
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
  }
  // Math delimiters.
  for (std::string_view d : {"\\(", "\\)", "\\[", "\\]"}) replace_all(s, d, " ");
  replace_command(s, "displaystyle", " ");
  replace_command(s, "textstyle", " ");
  // A boxed answer given as the reference: keep its contents.
  s = trim(s);
  while (!s.empty() && (s.back() == '.' || s.back() == ';')) s = trim(s.substr(0, s.size() - 1));
  for (std::string_view box : {"\\boxed", "\\fbox"}) {
    if (s.rfind(box, 0) == 0) {
      size_t open = s.find('{');
      if (open != std::string::npos && matching_brace(s, open) == s.size() - 1 && trim(s.substr(box.size(), open - box.size())).empty()) {
        s = s.substr(open + 1, s.size() - open - 2);
      }
    }
  }
  // Thousands separators written the LaTeX way: 1{,}000 and 10,\!080.
  replace_all(s, "{,}", ",");
  for (int guard = 0; guard < 64; ++guard) {
    size_t j = s.find(",\\!");
    if (j == std::string::npos) break;
    size_t k = j + 3;
    while (k < s.size() && s[k] == ' ') ++k;
    s = s.substr(0, j) + (k + 2 < s.size() && is_digit(s[k]) && is_digit(s[k + 1]) && is_digit(s[k + 2]) && j > 0 && is_digit(s[j - 1]) ? "" : ",") + s.substr(k);
  }
  // \left / \right and sizing commands.
  replace_all(s, "\\left.", " ");
  replace_all(s, "\\right.", " ");
  for (std::string_view c : {"left", "right", "bigl", "bigr", "Bigl", "Bigr", "big", "Big", "biggl", "biggr"}) replace_command(s, c, "");
  // Spacing.
  replace_spacing(s);
  for (std::string_view c : {"quad", "qquad", "hfill"}) replace_command(s, c, " ");
  // Spellings of the same thing.
  replace_command(s, "dfrac", "\\frac");
  replace_command(s, "tfrac", "\\frac");
  replace_command(s, "cfrac", "\\frac");
  replace_command(s, "dbinom", "\\binom");
  replace_command(s, "tbinom", "\\binom");
  replace_command(s, "lvert", "|");
  replace_command(s, "rvert", "|");
  replace_command(s, "vert", "|");
  replace_command(s, "le", "\\leq");
  replace_command(s, "ge", "\\geq");
  replace_command(s, "neq", "\\ne");
  replace_command(s, "emptyset", "\\varnothing");
  // Degrees and percent.
  for (std::string_view c : {"^{\\circ}", "^\\circ", "^{\\circ }", "\\circ", "\\degree"}) replace_all(s, c, " ");
  replace_all(s, "\\%", " ");
  replace_all(s, "%", " ");
  // Dollar signs (currency and math delimiters alike).
  replace_all(s, "\\$", " ");
  replace_all(s, "$", " ");
  unwrap_font_commands(s);
  handle_text_commands(s);
  s = trim(s);
  // Trailing sentence punctuation.
  while (!s.empty() && (s.back() == '.' || s.back() == ';')) {
    s.pop_back();
    s = trim(s);
  }
  // Collapse runs of spaces.
  std::string collapsed;
  for (char c : s) {
    if (c == ' ' && (collapsed.empty() || collapsed.back() == ' ')) continue;
    collapsed += c;
  }
  s = trim(collapsed);
  strip_trailing_unit_words(s);
  for (std::string_view w : {" degrees", " degree", " percent"}) {
    if (s.size() > w.size() && s.compare(s.size() - w.size(), w.size(), w) == 0) s = trim(s.substr(0, s.size() - w.size()));
  }
  // "x \in [1, 2)": the set itself.
  if (s.size() > 4 && is_alpha(s[0]) && s.compare(1, 4, " \\in") == 0) s = trim(s.substr(5));
  if (s.size() > 3 && is_alpha(s[0]) && s.compare(1, 3, "\\in") == 0 && !is_alpha(s[4])) s = trim(s.substr(4));
  // A whole answer that is one comma-grouped number: "1,000" -> "1000".
  {
    std::string compact = remove_char(s, ' ');
    if (is_grouped_number(compact)) s = remove_char(compact, ',');
  }
  // A multiple-choice letter in parentheses: "(B)" -> "B".
  if (s.size() == 3 && s[0] == '(' && s[2] == ')' && std::isupper(static_cast<unsigned char>(s[1]))) s = s.substr(1, 1);
  return s;
}

}  // namespace rlf::math
