#include "feedback/critic.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace rlf {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string format_reward(const std::optional<double>& r) {
  if (!r) return "missing";
  std::ostringstream os;
  os << *r;
  return os.str();
}

}  // namespace

const std::vector<std::string>& feedback_placeholders() {
  static const std::vector<std::string> kNames = {"prompt", "response", "reference", "explanation",
                                                  "reward", "verdict",  "critique"};
  return kNames;
}

std::string fill_feedback_template(const std::string& text, const CritiqueRequest& r, const std::string& critique) {
  std::string out;
  out.reserve(text.size() + r.prompt.size() + r.response.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '{') {
      const size_t close = text.find('}', i + 1);
      if (close != std::string::npos) {
        const std::string key = text.substr(i + 1, close - i - 1);
        const std::string* value = nullptr;
        std::string tmp;
        if (key == "prompt") value = &r.prompt;
        else if (key == "response") value = &r.response;
        else if (key == "reference") value = r.task ? &r.task->reference : &tmp;
        else if (key == "explanation") value = &r.explanation;
        else if (key == "critique") value = &critique;
        else if (key == "reward") tmp = format_reward(r.reward), value = &tmp;
        else if (key == "verdict") tmp = r.correct ? "correct" : "incorrect", value = &tmp;
        if (value) {
          out += *value;
          i = close + 1;
          continue;
        }
      }
    }
    out += text[i++];
  }
  return out;
}

Critique critique_from_text(const std::string& text) {
  Critique c;
  const size_t a = text.find_first_not_of(" \n\t"), b = text.find_last_not_of(" \n\t");
  c.text = a == std::string::npos ? "" : text.substr(a, b - a + 1);
  c.ok = !c.text.empty();
  if (!c.ok) c.error = "empty critique";
  else c.verdict = parse_verdict(c.text);
  return c;
}

std::optional<bool> parse_verdict(const std::string& critique) {
  std::optional<bool> verdict;
  std::istringstream in(critique);
  std::string line;
  while (std::getline(in, line)) {
    std::string l = lower(line);
    const size_t start = l.find_first_not_of(" \t*#");
    if (start == std::string::npos || l.compare(start, 8, "verdict:") != 0) continue;
    std::string rest = l.substr(start + 8);
    rest.erase(std::remove_if(rest.begin(), rest.end(), [](char c) { return !std::isalpha(static_cast<unsigned char>(c)); }),
               rest.end());
    if (rest.rfind("incorrect", 0) == 0 || rest.rfind("wrong", 0) == 0) verdict = false;
    else if (rest.rfind("correct", 0) == 0) verdict = true;
  }
  return verdict;
}

}  // namespace rlf
