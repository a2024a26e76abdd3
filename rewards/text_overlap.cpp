// BLEU, chrF and ROUGE-L as sacrebleu 2.x and rouge_score compute them; see text_overlap.h.
#include "rewards/text_overlap.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "tokenizer/unicode_text.h"
#include "util/error.h"

namespace rlf {
namespace {

// One code point of `s` at `i` (its byte length in *len); an invalid byte is a code point of its own.
char32_t code_point_at(std::string_view s, size_t i, size_t* len) {
  const auto lead = static_cast<unsigned char>(s[i]);
  const size_t n = unicode::utf8_seq_len(lead);
  if (n <= 1 || i + n > s.size()) {
    *len = 1;
    return lead;
  }
  char32_t cp = lead & (0xFF >> (n + 1));
  for (size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) {
      *len = 1;
      return lead;
    }
    cp = (cp << 6) | (c & 0x3F);
  }
  *len = n;
  return cp;
}

// Python's str.isspace(): what str.split() and str.strip() treat as whitespace.
bool is_py_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// The code points of `s`, as byte strings.
std::vector<std::string_view> code_points(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t i = 0, n = 0; i < s.size(); i += n) {
    code_point_at(s, i, &n);
    out.push_back(s.substr(i, n));
  }
  return out;
}

// Python's s.split(): runs of non-whitespace.
std::vector<std::string> py_split(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0, n = 0; i < s.size(); i += n) {
    const char32_t c = code_point_at(s, i, &n);
    if (is_py_space(c)) {
      if (!cur.empty()) out.push_back(std::move(cur)), cur.clear();
    } else {
      cur.append(s.substr(i, n));
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

// Python's s.rstrip().
std::string_view py_rstrip(std::string_view s) {
  size_t end = 0;
  for (size_t i = 0, n = 0; i < s.size(); i += n)
    if (!is_py_space(code_point_at(s, i, &n))) end = i + n;
  return s.substr(0, end);
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The punctuation 13a pads with spaces: { | } ~ [ \ ] ^ _ ` space ! " # $ % & ( ) * + : ; < = > ? @ /
bool is_13a_punct(char c) {
  return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') || (c >= '(' && c <= '+') ||
         (c >= ':' && c <= '@') || c == '/';
}

// re.sub of a two-character pattern (first class, second class) with `left` + 1st + `mid` + 2nd + `right`,
// left to right without overlaps, as Python does. The classes test single bytes: the patterns only
// name ASCII characters, and a multi-byte code point's bytes are all outside them.
template <typename First, typename Second>
std::string sub_pairs(const std::string& s, First first, Second second, const char* left, const char* mid,
                      const char* right) {
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      out += left;
      out += s[i];
      out += mid;
      out += s[i + 1];
      out += right;
      i += 2;
    } else {
      out += s[i++];
    }
  }
  return out;
}

using Counts = std::unordered_map<std::string, int64_t>;

// Word n-grams of order n (joined by a byte no token holds).
Counts word_ngrams(const std::vector<std::string>& tokens, size_t n) {
  Counts c;
  for (size_t i = 0; i + n <= tokens.size(); ++i) {
    std::string key = tokens[i];
    for (size_t k = 1; k < n; ++k) key += '\x1f', key += tokens[i + k];
    ++c[key];
  }
  return c;
}

int64_t clipped_matches(const Counts& hyp, const Counts& ref) {
  int64_t m = 0;
  for (const auto& [g, n] : hyp)
    if (auto it = ref.find(g); it != ref.end()) m += std::min(n, it->second);
  return m;
}

int64_t total_of(const Counts& c) {
  int64_t t = 0;
  for (const auto& [g, n] : c) t += n;
  return t;
}

// Lowercase ASCII alphanumeric runs (rouge_score's tokenizer without a stemmer).
std::vector<std::string> rouge_tokens(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    const char c = (ch >= 'A' && ch <= 'Z') ? static_cast<char>(ch - 'A' + 'a') : ch;
    if ((c >= 'a' && c <= 'z') || is_digit(c)) {
      cur += c;
    } else if (!cur.empty()) {
      out.push_back(std::move(cur)), cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

}  // namespace

std::string tokenize_13a(std::string_view text) {
  std::string line(py_rstrip(text));
  replace_all(line, "<skipped>", "");
  replace_all(line, "-\n", "");
  replace_all(line, "\n", " ");
  replace_all(line, "&quot;", "\"");
  replace_all(line, "&amp;", "&");
  replace_all(line, "&lt;", "<");
  replace_all(line, "&gt;", ">");
  line = " " + line + " ";
  std::string padded;
  padded.reserve(line.size() * 2);
  for (char c : line) {
    if (is_13a_punct(c)) padded += ' ', padded += c, padded += ' ';
    else padded += c;
  }
  auto not_digit = [](char c) { return !is_digit(c); };
  auto dot_comma = [](char c) { return c == '.' || c == ','; };
  padded = sub_pairs(padded, not_digit, dot_comma, "", " ", " ");   // period and comma unless preceded by a digit
  padded = sub_pairs(padded, dot_comma, not_digit, " ", " ", "");   // ... unless followed by a digit
  padded = sub_pairs(padded, is_digit, [](char c) { return c == '-'; }, "", " ", " ");  // dash after a digit
  std::string out;
  for (const std::string& t : py_split(padded)) out += (out.empty() ? "" : " ") + t;
  return out;
}

double sentence_bleu(std::string_view hypothesis, std::string_view reference) {
  const std::vector<std::string> hyp = py_split(tokenize_13a(hypothesis)), ref = py_split(tokenize_13a(reference));
  constexpr size_t kOrder = 4;
  int64_t correct[kOrder], total[kOrder];
  bool any = false;
  for (size_t n = 1; n <= kOrder; ++n) {
    const Counts h = word_ngrams(hyp, n);
    correct[n - 1] = clipped_matches(h, word_ngrams(ref, n));
    total[n - 1] = total_of(h);
    any |= correct[n - 1] > 0;
  }
  const double sys_len = static_cast<double>(hyp.size()), ref_len = static_cast<double>(ref.size());
  const double bp = sys_len < ref_len ? (sys_len > 0 ? std::exp(1 - ref_len / sys_len) : 0.0) : 1.0;
  if (!any) return 0.0;
  double smooth = 1, log_sum = 0;
  size_t eff_order = 0;
  for (size_t n = 1; n <= kOrder; ++n) {
    if (total[n - 1] == 0) break;
    eff_order = n;
    double p;
    if (correct[n - 1] == 0) {
      smooth *= 2;  // "exp" smoothing
      p = 100.0 / (smooth * static_cast<double>(total[n - 1]));
    } else {
      p = 100.0 * static_cast<double>(correct[n - 1]) / static_cast<double>(total[n - 1]);
    }
    log_sum += std::log(p);
  }
  return bp * std::exp(log_sum / static_cast<double>(eff_order)) / 100.0;
}

double sentence_chrf(std::string_view hypothesis, std::string_view reference) {
  constexpr size_t kOrder = 6;
  constexpr double kBeta = 2;
  auto chars = [](std::string_view s) {
    std::string joined;
    for (const std::string& w : py_split(s)) joined += w;
    return joined;
  };
  const std::string hyp_text = chars(hypothesis), ref_text = chars(reference);
  const auto hyp = code_points(hyp_text), ref = code_points(ref_text);
  auto char_ngrams = [](const std::vector<std::string_view>& cps, size_t n) {
    Counts c;
    for (size_t i = 0; i + n <= cps.size(); ++i) {
      std::string key;
      for (size_t k = 0; k < n; ++k) key.append(cps[i + k]);
      ++c[key];
    }
    return c;
  };
  double avg_prec = 0, avg_rec = 0;
  int effective = 0;
  for (size_t n = 1; n <= kOrder; ++n) {
    const Counts h = char_ngrams(hyp, n), r = char_ngrams(ref, n);
    const int64_t n_ref = total_of(r), n_hyp = r.empty() ? 0 : total_of(h), n_match = clipped_matches(h, r);
    if (n_hyp > 0 && n_ref > 0) {
      avg_prec += static_cast<double>(n_match) / static_cast<double>(n_hyp);
      avg_rec += static_cast<double>(n_match) / static_cast<double>(n_ref);
      ++effective;
    }
  }
  if (effective == 0) return 0.0;
  avg_prec /= effective;
  avg_rec /= effective;
  if (avg_prec + avg_rec == 0) return 0.0;
  const double f = kBeta * kBeta;
  return (1 + f) * avg_prec * avg_rec / (f * avg_prec + avg_rec);
}

RougeScore rouge_l(std::string_view hypothesis, std::string_view reference) {
  const std::vector<std::string> hyp = rouge_tokens(hypothesis), ref = rouge_tokens(reference);
  RougeScore s;
  if (hyp.empty() || ref.empty()) return s;
  std::vector<int64_t> prev(hyp.size() + 1, 0), cur(hyp.size() + 1, 0);
  for (size_t i = 1; i <= ref.size(); ++i) {
    for (size_t j = 1; j <= hyp.size(); ++j)
      cur[j] = ref[i - 1] == hyp[j - 1] ? prev[j - 1] + 1 : std::max(prev[j], cur[j - 1]);
    std::swap(prev, cur);
  }
  const double lcs = static_cast<double>(prev[hyp.size()]);
  s.precision = lcs / static_cast<double>(hyp.size());
  s.recall = lcs / static_cast<double>(ref.size());
  s.f = s.precision + s.recall > 0 ? 2 * s.precision * s.recall / (s.precision + s.recall) : 0.0;
  return s;
}

void validate(const TextOverlapOptions& o) {
  check(o.metric == "bleu" || o.metric == "chrf" || o.metric == "rouge_l", "unknown text-overlap metric '", o.metric,
        "' (bleu, chrf, rouge_l)");
  check(o.rouge_measure == "f" || o.rouge_measure == "precision" || o.rouge_measure == "recall",
        "option 'measure' must be \"f\", \"precision\" or \"recall\" (got \"", o.rouge_measure, "\")");
  check(o.rouge_measure == "f" || o.metric == "rouge_l", "option 'measure' applies to rouge_l only");
}

TextOverlapOptions read_text_overlap_options(OptionReader& reader, const std::string& metric) {
  TextOverlapOptions o;
  o.metric = metric;
  o.field = reader.get_string("field", o.field);
  if (metric == "rouge_l") o.rouge_measure = reader.get_string("measure", o.rouge_measure);
  return o;
}

TextOverlapReward::TextOverlapReward(TextOverlapOptions options) : options_(std::move(options)) { validate(options_); }

std::string TextOverlapReward::reference_of(const Json& record, const std::string& reference,
                                            const std::string& where) const {
  if (options_.field.empty()) {
    check(!reference.empty(), where, ": the ", options_.metric, " reward needs a reference answer and the record has "
          "none; add one (the dataset's answer field) or set the reward's option 'field'");
    return reference;
  }
  auto it = record.is_object() ? record.find(options_.field) : record.end();
  check(it != record.end() && it->is_string(), where, ": the ", options_.metric, " reward needs the record field '",
        options_.field, "' (a string)");
  return it->get<std::string>();
}

void TextOverlapReward::check_record(const Json& record, const std::string& reference, const std::string& where) const {
  reference_of(record, reference, where);
}

std::vector<RewardResult> TextOverlapReward::score(const RewardGroup& group) {
  const std::string ref = reference_of(group.record, group.reference, options_.metric + " reward");
  std::vector<RewardResult> out(group.samples.size());
  for (size_t i = 0; i < group.samples.size(); ++i) {
    const std::string& hyp = group.samples[i].completion;
    double v;
    if (options_.metric == "bleu") {
      v = sentence_bleu(hyp, ref);
    } else if (options_.metric == "chrf") {
      v = sentence_chrf(hyp, ref);
    } else {
      const RougeScore r = rouge_l(hyp, ref);
      v = options_.rouge_measure == "precision" ? r.precision : options_.rouge_measure == "recall" ? r.recall : r.f;
    }
    out[i].score = v;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", v);
    out[i].explanation = options_.metric + " " + buf + " against the reference";
  }
  return out;
}

}  // namespace rlf
