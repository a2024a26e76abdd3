#include "util/json_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "util/fs.h"

namespace rlf {

Json parse_json(const std::string& text, const std::string& source) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    fail(source, ": malformed JSON at byte ", e.byte, ": ", e.what());
  } catch (const Json::exception& e) {  // e.g. a number out of range (1e400)
    fail(source, ": invalid JSON: ", e.what());
  }
}

Json read_json_file(const std::string& path) { return parse_json(read_file(path), "'" + path + "'"); }

std::string json_line(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

namespace {

// NaN, Infinity and -Infinity are read by standing in for them a string no
// valid JSON text can be mistaken for unnoticed: it starts with U+0000 (which
// a JSON string can hold only as the escape \u0000), and every stand-in found
// is counted against the words replaced, so a string that happens to equal
// one is an error, never a silent NaN.
constexpr const char* kStandInPrefix = "\\u0000rlf-non-finite:";  // as written in JSON text
const std::string kStandInDecoded = std::string(1, '\0') + "rlf-non-finite:";

struct NonFiniteWord {
  const char* word;
  double value;
};
const NonFiniteWord kNonFiniteWords[] = {{"-Infinity", -std::numeric_limits<double>::infinity()},
                                         {"Infinity", std::numeric_limits<double>::infinity()},
                                         {"NaN", std::numeric_limits<double>::quiet_NaN()}};

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '+' || c == '-';
}

// Where a word was replaced: its offset in the new text and how many bytes longer the stand-in is.
struct Replacement {
  size_t at = 0;
  size_t growth = 0;
};

// `text` with every bare NaN / Infinity / -Infinity outside strings replaced
// by its stand-in string.
std::string replace_non_finite_words(const std::string& text, std::vector<Replacement>* replacements) {
  std::string out;
  out.reserve(text.size() + 64);
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    const NonFiniteWord* found = nullptr;
    if (i == 0 || !is_word_char(text[i - 1])) {
      for (const NonFiniteWord& w : kNonFiniteWords) {
        const size_t n = std::strlen(w.word);
        if (text.compare(i, n, w.word) == 0 && (i + n == text.size() || !is_word_char(text[i + n]))) {
          found = &w;
          break;
        }
      }
    }
    if (!found) {
      out += c;
      continue;
    }
    const std::string stand_in = std::string("\"") + kStandInPrefix + found->word + "\"";
    replacements->push_back({out.size(), stand_in.size() - std::strlen(found->word)});
    out += stand_in;
    i += std::strlen(found->word) - 1;
  }
  return out;
}

// Parses text whose non-finite words were replaced, putting the numbers back.
// Without exceptions: a discarded value when it does not parse or when the
// stand-ins found do not add up to those replaced.
Json parse_with_stand_ins(const std::string& replaced, int64_t n_replaced, bool allow_exceptions) {
  int64_t n_found = 0;
  Json::parser_callback_t restore = [&](int, Json::parse_event_t event, Json& parsed) {
    if (event != Json::parse_event_t::value || !parsed.is_string()) return true;
    const std::string& s = parsed.get_ref<const std::string&>();
    if (s.size() <= kStandInDecoded.size() || s.compare(0, kStandInDecoded.size(), kStandInDecoded) != 0) return true;
    for (const NonFiniteWord& w : kNonFiniteWords)
      if (s.compare(kStandInDecoded.size(), std::string::npos, w.word) == 0) {
        parsed = w.value;
        ++n_found;
        break;
      }
    return true;
  };
  Json j = Json::parse(replaced, restore, allow_exceptions);
  if (j.is_discarded()) return j;
  if (n_found != n_replaced) {
    check(!allow_exceptions, "a string value holds the text rlf uses to read NaN/Infinity (it starts with \\u0000)");
    return Json(Json::value_t::discarded);
  }
  return j;
}

}  // namespace

Json parse_json_allowing_nan(const std::string& text, const std::string& source) {
  std::vector<Replacement> replacements;
  const std::string replaced = replace_non_finite_words(text, &replacements);
  if (replacements.empty()) return parse_json(text, source);
  try {
    return parse_with_stand_ins(replaced, static_cast<int64_t>(replacements.size()), true);
  } catch (const Json::parse_error& e) {
    // The offset in the text as written: less the growth of the stand-ins before it.
    size_t at = e.byte;
    for (auto r = replacements.rbegin(); r != replacements.rend(); ++r)
      if (r->at < e.byte) at -= std::min(at, r->growth);
    const size_t from = std::min(at > 20 ? at - 20 : 0, text.size());
    fail(source, ": malformed JSON at byte ", at, " near '", text.substr(from, std::min<size_t>(40, text.size() - from)),
         "' (NaN, Infinity and -Infinity are read as numbers)");
  } catch (const Json::exception& e) {
    fail(source, ": invalid JSON: ", e.what());
  } catch (const Error& e) {
    fail(source, ": ", e.what());
  }
}

Json try_parse_json_allowing_nan(const std::string& text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded()) return j;
  std::vector<Replacement> replacements;
  const std::string replaced = replace_non_finite_words(text, &replacements);
  if (replacements.empty()) return j;
  return parse_with_stand_ins(replaced, static_cast<int64_t>(replacements.size()), false);
}

namespace {

// A copy of `j` with non-finite numbers replaced by their stand-in strings.
Json with_stand_ins(const Json& j, bool* any) {
  if (j.is_number_float() && !std::isfinite(j.get<double>())) {
    *any = true;
    const double v = j.get<double>();
    return Json(kStandInDecoded + (std::isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity"));
  }
  if (j.is_array() || j.is_object()) {
    Json out = j;
    for (auto& v : out) v = with_stand_ins(v, any);
    return out;
  }
  return j;
}

}  // namespace

std::string json_text_for_message(const Json& j) {
  bool any = false;
  Json marked = with_stand_ins(j, &any);
  std::string text = json_line(marked);
  if (!any) return text;
  // Each stand-in is written as "\u0000rlf-non-finite:WORD" (quotes included): write the bare word.
  const std::string open = std::string("\"") + kStandInPrefix;
  for (size_t at = text.find(open); at != std::string::npos; at = text.find(open, at)) {
    const size_t word = at + open.size();
    const size_t close = text.find('"', word);
    if (close == std::string::npos) break;
    text = text.substr(0, at) + text.substr(word, close - word) + text.substr(close + 1);
  }
  return text;
}

}  // namespace rlf
