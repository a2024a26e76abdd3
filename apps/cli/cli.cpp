#include "apps/cli/cli.h"

#include <charconv>
#include <cmath>
#include <set>
#include <sstream>

#include "util/error.h"

namespace rlf::cli {

namespace {

bool parse_int(const std::string& s, int64_t& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parse_float(const std::string& s, double& out) {
  if (s.empty()) return false;
  try {
    size_t n = 0;
    out = std::stod(s, &n);
    return n == s.size();
  } catch (...) {
    return false;
  }
}

const char* kind_name(OptKind k) {
  switch (k) {
    case OptKind::Flag: return "flag";
    case OptKind::String: return "string";
    case OptKind::Int: return "integer";
    case OptKind::Float: return "number";
    case OptKind::List: return "list";
  }
  return "?";
}

// The options a command accepts: its own, then the common ones it doesn't override.
std::vector<OptionSpec> all_options(const CommandSpec& cmd) {
  std::vector<OptionSpec> out = cmd.options;
  for (const auto& c : common_options()) {
    bool shadowed = false;
    for (const auto& o : cmd.options) shadowed |= (o.name == c.name);
    if (!shadowed) out.push_back(c);
  }
  return out;
}

std::string bound(double v) {
  std::ostringstream s;
  if (std::abs(v) < 9e15 && std::trunc(v) == v) s << static_cast<int64_t>(v);
  else s << v;
  return s.str();
}

void check_value(const OptionSpec& o, const std::string& value, const std::string& where) {
  int64_t i = 0;
  double d = 0;
  if (o.kind == OptKind::Int) {
    check(parse_int(value, i), where, ": --", o.name, " expects an integer, got '", value, "'");
    d = static_cast<double>(i);
  }
  if (o.kind == OptKind::Float)
    check(parse_float(value, d) && std::isfinite(d), where, ": --", o.name, " expects a number, got '", value, "'");
  if (o.kind == OptKind::Int || o.kind == OptKind::Float)
    check(d >= o.min && d <= o.max, where, ": --", o.name, " ", value, ": must be in [", bound(o.min), ", ",
          bound(o.max), "]");
}

}  // namespace

bool Args::given(const std::string& name) const {
  auto it = given_.find(name);
  return it != given_.end() && it->second;
}

const std::string& Args::raw(const std::string& name) const {
  auto it = values_.find(name);
  check(it != values_.end(), "internal: option --", name, " is not declared for this command");
  return it->second;
}

bool Args::flag(const std::string& name) const { return raw(name) == "true"; }
const std::string& Args::str(const std::string& name) const { return raw(name); }

int64_t Args::integer(const std::string& name) const {
  int64_t v = 0;
  check(parse_int(raw(name), v), "--", name, " expects an integer, got '", raw(name), "'");
  return v;
}

double Args::number(const std::string& name) const {
  double v = 0;
  check(parse_float(raw(name), v), "--", name, " expects a number, got '", raw(name), "'");
  return v;
}

std::vector<std::string> Args::list(const std::string& name) const {
  auto it = lists_.find(name);
  return it == lists_.end() ? std::vector<std::string>{} : it->second;
}

void Args::set(const std::string& name, const std::string& value, bool given) {
  values_[name] = value;
  given_[name] = given;
}

void Args::append(const std::string& name, const std::string& value) {
  lists_[name].push_back(value);
  given_[name] = true;
}

const std::vector<OptionSpec>& common_options() {
  static const std::vector<OptionSpec> opts = {
      {"threads", OptKind::Int, "0", "intra-op CPU threads for LibTorch (0 = all cores)", "N", 0, 1024},
      {"device", OptKind::String, "cpu", "where tensors live: cpu, cuda or cuda:N", "DEV"},
      {"help", OptKind::Flag, "false", "show this command's options", ""},
  };
  return opts;
}

const CommandSpec& parse_command_line(const std::vector<std::string>& argv, Args& args) {
  const auto& table = command_table();
  const CommandSpec* cmd = nullptr;
  size_t used = 0;
  for (const auto& c : table) {
    std::istringstream words(c.name);
    std::string w;
    size_t i = 0;
    bool match = true;
    while (words >> w) {
      if (i >= argv.size() || argv[i] != w) {
        match = false;
        break;
      }
      ++i;
    }
    if (match && i > used) cmd = &c, used = i;
  }
  const std::vector<const CommandSpec*> subs = argv.empty() ? std::vector<const CommandSpec*>{} : subcommands_of(argv[0]);
  if (!cmd && !subs.empty()) {
    std::string names;
    for (const CommandSpec* c : subs) names += (names.empty() ? "" : ", ") + c->name.substr(argv[0].size() + 1);
    const bool sub_given = argv.size() > 1 && argv[1].rfind("-", 0) != 0;
    fail(sub_given ? "unknown command 'rlf " + argv[0] + " " + argv[1] + "'" : "'rlf " + argv[0] + "' needs a subcommand",
         "; 'rlf ", argv[0], "' takes: ", names, " (run 'rlf ", argv[0], " SUBCOMMAND --help')");
  }
  if (!cmd) {
    std::string got = argv.empty() ? std::string("nothing") : "'" + argv[0] + "'";
    fail("unknown command ", got, "; run 'rlf --help' for the list of commands");
  }
  const std::string where = "rlf " + cmd->name;
  std::vector<OptionSpec> opts = all_options(*cmd);
  for (const auto& o : opts)
    if (o.kind != OptKind::List) args.set(o.name, o.default_value, false);

  bool options_done = false;
  for (size_t i = used; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (options_done || a.size() < 2 || a.rfind("--", 0) != 0) {
      if (a == "--") {
        options_done = true;
        continue;
      }
      args.add_positional(a);
      continue;
    }
    std::string name = a.substr(2), value;
    bool has_inline = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_inline = true;
    }
    const OptionSpec* spec = nullptr;
    for (const auto& o : opts)
      if (o.name == name) spec = &o;
    check(spec != nullptr, where, ": unknown option --", name, "; run '", where, " --help' to list the options");
    if (spec->kind == OptKind::Flag) {
      check(!has_inline || value == "true" || value == "false", where, ": --", name, " is a flag and takes no value");
      args.set(name, has_inline ? value : "true", true);
      continue;
    }
    if (!has_inline) {
      check(i + 1 < argv.size(), where, ": --", name, " needs a value (", spec->metavar.empty() ? kind_name(spec->kind) : spec->metavar, ")");
      value = argv[++i];
    }
    check_value(*spec, value, where);
    if (spec->kind == OptKind::List) args.append(name, value);
    else args.set(name, value, true);
  }
  if (args.flag("help")) return *cmd;
  size_t n = args.positional().size();
  check(n >= cmd->n_positional_min, where, ": missing argument ", cmd->usage, "; usage: ", where, " ", cmd->usage, " [options]");
  check(n <= cmd->n_positional_max, where, ": unexpected argument '", args.positional()[std::min(n - 1, cmd->n_positional_max)],
        "'; run '", where, " --help'");
  return *cmd;
}

std::string command_help(const CommandSpec& cmd) {
  std::ostringstream out;
  out << "usage: rlf " << cmd.name << (cmd.usage.empty() ? "" : " " + cmd.usage) << " [options]\n\n" << cmd.summary << "\n\noptions:\n";
  for (const auto& o : all_options(cmd)) {
    std::string left = "  --" + o.name + (o.kind == OptKind::Flag ? "" : " " + (o.metavar.empty() ? std::string(kind_name(o.kind)) : o.metavar));
    out << left;
    out << std::string(left.size() < 34 ? 34 - left.size() : 1, ' ') << o.help;
    if (o.kind != OptKind::Flag && !o.default_value.empty()) out << " (default: " << o.default_value << ")";
    if (o.kind == OptKind::List) out << " (repeatable)";
    out << "\n";
  }
  return out.str();
}

std::vector<const CommandSpec*> subcommands_of(const std::string& word) {
  std::vector<const CommandSpec*> out;
  for (const auto& c : command_table())
    if (c.name.size() > word.size() && c.name.compare(0, word.size() + 1, word + " ") == 0) out.push_back(&c);
  return out;
}

std::string group_help(const std::string& word) {
  std::ostringstream out;
  out << "usage: rlf " << word << " SUBCOMMAND [options]\n\nsubcommands:\n";
  for (const CommandSpec* c : subcommands_of(word)) {
    std::string left = "  " + c->name;
    out << left << std::string(left.size() < 22 ? 22 - left.size() : 1, ' ') << c->summary << "\n";
  }
  out << "\nrun 'rlf " << word << " SUBCOMMAND --help' for a subcommand's options.\n";
  return out.str();
}

std::string global_help() {
  std::ostringstream out;
  out << "rlf — reinforcement learning from feedback for language models\n\nusage: rlf COMMAND [options]\n\ncommands:\n";
  for (const auto& c : command_table()) {
    std::string left = "  " + c.name;
    out << left << std::string(left.size() < 22 ? 22 - left.size() : 1, ' ') << c.summary << "\n";
  }
  out << "\nrun 'rlf COMMAND --help' for a command's options.\n";
  return out.str();
}

void validate_command_table() {
  std::set<std::string> names;
  for (const auto& c : command_table()) {
    check(!c.name.empty(), "command table: a command has no name");
    check(names.insert(c.name).second, "command table: duplicate command '", c.name, "'");
    check(static_cast<bool>(c.run), "command table: '", c.name, "' has no handler");
    check(!c.summary.empty(), "command table: '", c.name, "' has no summary");
    check(c.n_positional_min <= c.n_positional_max, "command table: '", c.name, "' positional range is inverted");
    std::set<std::string> opts;
    for (const auto& o : all_options(c)) {
      const std::string where = "command table: 'rlf " + c.name + " --" + o.name + "'";
      check(!o.name.empty() && o.name[0] != '-', where, ": option names are written without dashes");
      check(opts.insert(o.name).second, where, ": duplicate option");
      check(!o.help.empty(), where, ": missing help text");
      if (o.kind == OptKind::Flag)
        check(o.default_value == "false" || o.default_value == "true", where, ": a flag's default must be true or false");
      if ((o.kind == OptKind::Int || o.kind == OptKind::Float) && !o.default_value.empty()) check_value(o, o.default_value, where);
      if (o.kind == OptKind::Int || o.kind == OptKind::Float)
        check(o.min > -OptionSpec::kUnbounded && o.max < OptionSpec::kUnbounded && o.min <= o.max, where,
              ": numeric options need a range (min, max)");
      check(o.kind != OptKind::Int && o.kind != OptKind::Float ? true : !o.default_value.empty(), where, ": numeric options need a default");
    }
  }
}

}  // namespace rlf::cli
