#include "tests/apps/doc_commands.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <sstream>

#include "apps/cli/cli.h"
#include "eval/eval_config.h"
#include "train/demo.h"
#include "config/toml_config.h"
#include "train/train_config.h"

namespace rlf::test {

namespace {

// ---- Shell words ---------------------------------------------------------

struct Token {
  std::string text;
  bool op = false;  // an operator: ; && || | & ( ) $( ` or a redirection (> >> < 2>)
};

bool is_redirection(const Token& t) { return t.op && (t.text == ">" || t.text == "<"); }

// Splits a shell line into words and operators: quotes and backslashes as
// the shell reads them, `#` at a word's start ends the line. `|` inside a
// word (auto|fp32, a usage line's alternatives) stays in the word.
std::vector<Token> lex(const std::string& s) {
  std::vector<Token> out;
  std::string cur;
  bool in_word = false;
  auto flush = [&] {
    if (in_word) out.push_back({cur, false});
    cur.clear();
    in_word = false;
  };
  auto op = [&](const std::string& text) {
    flush();
    out.push_back({text, true});
  };
  const size_t n = s.size();
  for (size_t i = 0; i < n; ++i) {
    const char c = s[i];
    const char next = i + 1 < n ? s[i + 1] : '\0';
    if (c == ' ' || c == '\t') {
      flush();
    } else if (c == '#' && !in_word) {
      break;
    } else if (c == '\'') {
      in_word = true;
      const size_t end = s.find('\'', i + 1);
      cur += s.substr(i + 1, end == std::string::npos ? std::string::npos : end - i - 1);
      i = end == std::string::npos ? n : end;
    } else if (c == '"') {
      in_word = true;
      for (++i; i < n && s[i] != '"'; ++i) {
        if (s[i] == '\\' && i + 1 < n && std::string("\"\\$`").find(s[i + 1]) != std::string::npos) ++i;
        cur += s[i];
      }
    } else if (c == '\\') {
      in_word = true;
      if (i + 1 < n) cur += s[++i];
    } else if (c == '$' && next == '(') {
      op("$(");
      ++i;
    } else if (c == ';' || c == '(' || c == ')' || c == '`') {
      op(std::string(1, c));
    } else if (c == '&') {
      op(next == '&' ? "&&" : "&");
      if (next == '&') ++i;
    } else if (c == '|' && (!in_word || next == '|')) {
      op(next == '|' ? "||" : "|");
      if (next == '|') ++i;
    } else if ((c == '>' || c == '<') && !in_word) {
      op(std::string(1, c));
      if (next == '>' || next == '&') ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c)) && !in_word && next == '>') {
      op(">");
      ++i;
    } else {
      in_word = true;
      cur += c;
    }
  }
  flush();
  return out;
}

// The simple commands of a line: words between operators, without
// redirections and their targets.
std::vector<std::vector<std::string>> simple_commands(const std::vector<Token>& tokens) {
  std::vector<std::vector<std::string>> out(1);
  bool skip_target = false;
  for (const Token& t : tokens) {
    if (is_redirection(t)) {
      skip_target = true;
    } else if (t.op) {
      out.emplace_back();
    } else if (skip_target) {
      skip_target = false;
    } else {
      out.back().push_back(t.text);
    }
  }
  return out;
}

bool is_assignment(const std::string& w) {
  const size_t eq = w.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  return std::all_of(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(eq),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool is_command_word(const std::string& w) {
  return !w.empty() && std::islower(static_cast<unsigned char>(w[0])) &&
         std::all_of(w.begin(), w.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)) || c == '-'; });
}

bool is_rlf(const std::string& w) { return w == "rlf" || (w.size() > 4 && w.compare(w.size() - 4, 4, "/rlf") == 0); }

// The words after `rlf` when the simple command runs rlf (rules in the header).
std::optional<std::vector<std::string>> rlf_words(const std::vector<std::string>& w) {
  static const std::set<std::string> prefixes = {"do", "then", "else", "time", "$", "!"};
  size_t i = 0;
  while (i < w.size() && (prefixes.count(w[i]) || is_assignment(w[i]))) ++i;
  if (i < w.size() && w[i] == "torchrun") {
    const auto it = std::find(w.begin() + static_cast<std::ptrdiff_t>(i), w.end(), "--no_python");
    if (it == w.end()) return std::nullopt;
    i = static_cast<size_t>(it - w.begin()) + 1;
  }
  if (i + 1 >= w.size() || !is_rlf(w[i]) || !is_command_word(w[i + 1])) return std::nullopt;
  return std::vector<std::string>(w.begin() + static_cast<std::ptrdiff_t>(i) + 1, w.end());
}

void add_commands_of_line(const std::string& line, const std::string& file, int line_no,
                          std::vector<QuotedCommand>& out) {
  for (const auto& words : simple_commands(lex(line)))
    if (auto rest = rlf_words(words)) out.push_back({file, line_no, line, *rest});
}

// ---- Markdown ------------------------------------------------------------

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

bool is_fence(const std::string& line) {
  const std::string t = trim(line);
  return t.rfind("```", 0) == 0 || t.rfind("~~~", 0) == 0;
}

// Code blocks of data or another language hold no shell lines.
bool is_shell_block(const std::string& fence_line) {
  std::string info = trim(trim(fence_line).substr(3));
  info = info.substr(0, info.find_first_of(" \t{"));
  std::transform(info.begin(), info.end(), info.begin(), [](unsigned char c) { return std::tolower(c); });
  static const std::set<std::string> others = {"toml", "json", "jsonl", "python", "py", "cpp", "c", "c++", "yaml", "text"};
  return !others.count(info);
}

// An inline span is read as a shell line when its first word runs rlf or is
// one of the commands documents chain to rlf (not an error message's text).
bool starts_a_shell_line(const std::string& span) {
  static const std::set<std::string> chains = {"cp", "cd", "mkdir", "python3", "bash", "for", "time"};
  const std::vector<Token> tokens = lex(span);
  if (tokens.empty() || tokens.front().op) return false;
  const std::string& w = tokens.front().text;
  return is_rlf(w) || chains.count(w) || is_assignment(w);
}

// Inline code spans of a paragraph (or table row) starting at line `first`.
void add_commands_of_spans(const std::string& text, const std::string& file, int first,
                           std::vector<QuotedCommand>& out) {
  size_t i = 0;
  while ((i = text.find('`', i)) != std::string::npos) {
    const size_t run = text.find_first_not_of('`', i) == std::string::npos ? text.size() - i
                                                                           : text.find_first_not_of('`', i) - i;
    const std::string fence(run, '`');
    size_t close = text.find(fence, i + run);
    while (close != std::string::npos && close + run < text.size() && text[close + run] == '`')
      close = text.find(fence, close + run + 1);
    if (close == std::string::npos) return;
    std::string span = text.substr(i + run, close - i - run);
    std::replace(span.begin(), span.end(), '\n', ' ');
    span = trim(span);
    const int line = first + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(i), '\n'));
    if (starts_a_shell_line(span)) add_commands_of_line(span, file, line, out);
    i = close + run;
  }
}

}  // namespace

std::vector<QuotedCommand> extract_commands(const std::string& markdown, const std::string& file) {
  std::vector<QuotedCommand> out;
  std::istringstream in(markdown);
  std::string line, logical, paragraph;
  int line_no = 0, logical_start = 0, paragraph_start = 0;
  bool in_code = false, shell = false;
  auto end_paragraph = [&] {
    if (!paragraph.empty()) add_commands_of_spans(paragraph, file, paragraph_start, out);
    paragraph.clear();
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (is_fence(line)) {
      end_paragraph();
      shell = !in_code && is_shell_block(line);
      in_code = !in_code;
      logical.clear();
      continue;
    }
    if (in_code) {
      if (!shell) continue;
      if (logical.empty()) logical_start = line_no;
      const bool continued = !line.empty() && line.back() == '\\';
      logical += continued ? line.substr(0, line.size() - 1) + " " : line;
      if (!continued) {
        add_commands_of_line(logical, file, logical_start, out);
        logical.clear();
      }
      continue;
    }
    const bool table_row = trim(line).rfind('|', 0) == 0;
    if (trim(line).empty() || table_row) end_paragraph();
    if (trim(line).empty()) continue;
    if (paragraph.empty()) paragraph_start = line_no;
    paragraph += (paragraph.empty() ? "" : "\n") + line;
    if (table_row) end_paragraph();
  }
  end_paragraph();
  return out;
}

namespace {

// ---- Checking -----------------------------------------------------------

// A usage line's placeholder: `$`, `...`, or a capitalised word that is not
// part of a name (PATH, N, KEY=VALUE, CONFIG.toml, step-N; not stories260K).
bool is_placeholder(const std::string& s) {
  if (s.find('$') != std::string::npos || s.find("...") != std::string::npos) return true;
  auto alnum = [&](size_t i) { return std::isalnum(static_cast<unsigned char>(s[i])) != 0; };
  for (size_t i = 0; i < s.size();) {
    if (!std::isupper(static_cast<unsigned char>(s[i]))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && (std::isupper(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
    if ((i == 0 || !alnum(i - 1)) && (j == s.size() || !alnum(j))) return true;
    i = j;
  }
  return false;
}

// The words as the parser should see them: optional brackets and `...` dropped.
std::vector<std::string> without_usage_marks(const std::vector<std::string>& words) {
  std::vector<std::string> out;
  for (std::string w : words) {
    while (!w.empty() && w.front() == '[') w.erase(0, 1);
    while (!w.empty() && w.back() == ']') w.pop_back();
    if (!w.empty() && w != "...") out.push_back(w);
  }
  return out;
}

// "bench train|generate" -> "bench train": a usage line's alternative command words.
void first_alternative_commands(std::vector<std::string>& argv) {
  for (size_t i = 0; i < argv.size() && i < 2 && argv[i].rfind("--", 0) != 0; ++i)
    argv[i] = argv[i].substr(0, argv[i].find('|'));
}

// `rlf bench` alone names a group of commands ("bench generate", "bench train", ...).
// `rlf bench` or `rlf bench --help`: a word that groups subcommands, which lists them.
bool names_a_command_group(const std::vector<std::string>& argv) {
  if (argv.empty() || argv.size() > 2 || (argv.size() == 2 && argv[1] != "--help" && argv[1] != "-h")) return false;
  return !cli::subcommands_of(argv[0]).empty();
}

const cli::CommandSpec* find_command(const std::vector<std::string>& argv, size_t& used) {
  const cli::CommandSpec* found = nullptr;
  used = 0;
  for (const auto& c : cli::command_table()) {
    std::istringstream names(c.name);
    std::string w;
    size_t i = 0;
    bool match = true;
    while (match && names >> w) match = i < argv.size() && argv[i++] == w;
    if (match && i > used) found = &c, used = i;
  }
  return found;
}

const cli::OptionSpec* find_option(const cli::CommandSpec& cmd, const std::string& name) {
  for (const auto& o : cmd.options)
    if (o.name == name) return &o;
  for (const auto& o : cli::common_options())
    if (o.name == name) return &o;
  return nullptr;
}

// A numeric option's placeholder value becomes its default; alternatives their
// first; an option quoted last without its value gets one (its default).
void resolve_numeric_placeholders(const cli::CommandSpec& cmd, size_t first, std::vector<std::string>& argv) {
  for (size_t i = first; i < argv.size(); ++i) {
    if (argv[i].rfind("--", 0) != 0) continue;
    const size_t eq = argv[i].find('=');
    const cli::OptionSpec* o = find_option(cmd, argv[i].substr(2, eq == std::string::npos ? std::string::npos : eq - 2));
    if (!o || o->kind == cli::OptKind::Flag) continue;
    if (eq == std::string::npos && i + 1 == argv.size()) argv.push_back(o->default_value.empty() ? "X" : o->default_value);
    std::string& value = eq != std::string::npos ? argv[i] : (i + 1 < argv.size() ? argv[++i] : argv[i]);
    if (o->kind != cli::OptKind::Int && o->kind != cli::OptKind::Float) continue;
    const size_t start = eq != std::string::npos ? eq + 1 : 0;
    std::string v = value.substr(start);
    v = v.substr(0, v.find('|'));
    value = value.substr(0, start) + (is_placeholder(v) ? o->default_value : v);
  }
}

const ConfigSchema* schema_of(const cli::CommandSpec& cmd) {
  if (cmd.name == "train" || cmd.name == "compare" || cmd.name == "reflexion" || cmd.name == "demo")
    return &train_config_schema();
  if (cmd.name == "eval") return &eval_config_schema();
  return nullptr;
}

bool is_config_key(const ConfigSchema& schema, const std::string& key) {
  return std::any_of(schema.begin(), schema.end(), [&](const SchemaEntry& e) {
    return e.key == key || (e.type == OptionType::Any && key.rfind(e.key + ".", 0) == 0);
  });
}

std::optional<std::string> check_override_keys(const ConfigSchema& schema, const std::vector<std::string>& sets) {
  for (const std::string& s : sets) {
    const size_t eq = s.find('=');
    if (eq == std::string::npos) return "--set " + s + ": expected KEY=VALUE";
    const std::string key = s.substr(0, eq);
    if (!is_placeholder(key) && !is_config_key(schema, key)) return "--set " + s + ": '" + key + "' is not a config key";
  }
  return std::nullopt;
}

// "a/{x,y}.toml" -> a/x.toml, a/y.toml (one brace group, as the shell expands it).
std::vector<std::string> expand_braces(const std::string& w) {
  const size_t open = w.find('{'), close = w.find('}', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || close == std::string::npos) return {w};
  std::vector<std::string> out;
  std::istringstream parts(w.substr(open + 1, close - open - 1));
  for (std::string p; std::getline(parts, p, ',');) out.push_back(w.substr(0, open) + p + w.substr(close + 1));
  return out;
}

// The repository's config files a command names (none when a path is a placeholder or a glob).
std::vector<std::filesystem::path> config_files(const cli::CommandSpec& cmd, const cli::Args& a, const std::string& src) {
  std::vector<std::string> names;
  if (cmd.name == "train" || cmd.name == "reflexion" || cmd.name == "compare")
    for (const std::string& p : a.positional())
      for (const std::string& e : expand_braces(p)) names.push_back(e);
  if (cmd.name == "eval" && a.given("config")) names.push_back(a.str("config"));
  std::vector<std::filesystem::path> out;
  for (const std::string& n : names) {
    const std::filesystem::path p = std::filesystem::path(src) / n;
    if (!is_placeholder(n) && n.find('*') == std::string::npos && std::filesystem::is_regular_file(p)) out.push_back(p);
  }
  return out;
}

// Loads the configs as the command would, with its overrides.
void load_with_overrides(const cli::CommandSpec& cmd, const cli::Args& a, const std::string& src) {
  const std::vector<std::string> sets = a.list("set");
  if (cmd.name == "demo") {
    Json j = demo_config("/doc-check/init", "/doc-check", 0);
    apply_overrides(j, sets, /*allow_new_keys=*/true);
    train_config_from_json(j, "rlf demo");
    return;
  }
  for (const auto& path : config_files(cmd, a, src)) {
    if (cmd.name == "eval") read_eval_config(path, sets);
    else load_train_config(path, sets);
  }
}

}  // namespace

std::optional<std::string> check_command(const QuotedCommand& q, const std::string& source_dir) {
  std::vector<std::string> argv = without_usage_marks(q.words);
  first_alternative_commands(argv);
  if (names_a_command_group(argv)) return std::nullopt;
  size_t used = 0;
  const cli::CommandSpec* cmd = find_command(argv, used);
  if (cmd) resolve_numeric_placeholders(*cmd, used, argv);
  argv.push_back("--help");  // parse and check the options, count no positional argument, run nothing
  cli::Args a;
  try {
    cmd = &cli::parse_command_line(argv, a);
    const ConfigSchema* schema = schema_of(*cmd);
    const std::vector<std::string> sets = a.list("set");
    if (!schema) return std::nullopt;
    if (auto bad = check_override_keys(*schema, sets)) return bad;
    if (std::none_of(sets.begin(), sets.end(), [](const std::string& s) { return is_placeholder(s); }))
      load_with_overrides(*cmd, a, source_dir);
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

}  // namespace rlf::test
