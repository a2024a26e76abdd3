// TOML configuration files as JSON, and command-line overrides.
//
// A TOML document becomes a JSON object: tables → objects, arrays (and arrays
// of tables) → arrays, integers → int64, floats → double, booleans, strings;
// dates and times → their TOML text as strings. Syntax errors name the file,
// line and column: "run.toml:3:7: <what the parser says>".
//
// Overrides ("--set KEY.SUB=VALUE") replace one value by a dotted path; the
// value is read as a TOML value (1e-6, 42, true, "text", [1, 2], {a = 1}) and,
// when it is not one, as a bare string (cosine, /data/x.jsonl). Integer path
// segments index arrays ("rewards.0.weight"). A path that does not exist is an
// error listing the keys that do, unless the caller allows new keys.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "util/json_util.h"

namespace rlf {

// Parses TOML `text`; `source` names it in errors (a file name).
Json parse_toml(const std::string& text, const std::string& source);

// Reads and parses a TOML file.
Json read_toml_file(const std::filesystem::path& path);

// One override value: a TOML value, or else the text as a string.
Json parse_override_value(const std::string& text);

// Applies "KEY.SUB=VALUE" to `config`. Errors quote the assignment.
void apply_override(Json& config, const std::string& assignment, bool allow_new_keys = false);

// Applies each assignment in order.
void apply_overrides(Json& config, const std::vector<std::string>& assignments, bool allow_new_keys = false);

}  // namespace rlf
