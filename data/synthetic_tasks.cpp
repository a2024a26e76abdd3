// Synthetic arithmetic and countdown problems (see synthetic_tasks.h).
#include "data/synthetic_tasks.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "data/config_keys.h"
#include "data/countdown.h"
#include "data/seeded_rng.h"
#include "util/error.h"
#include "util/strings.h"

namespace rlf {

namespace {

// Draws allowed per problem asked for, before giving up on distinctness.
constexpr int64_t kDrawsPerProblem = 50;

int64_t pow10(int d) {
  int64_t p = 1;
  while (d-- > 0) p *= 10;
  return p;
}

// A number with `digits` digits (one digit: 0..9).
int64_t random_operand(SeededRng& rng, int digits) {
  return digits == 1 ? rng.uniform_int(0, 9) : rng.uniform_int(pow10(digits - 1), pow10(digits) - 1);
}

int64_t arithmetic_answer(int64_t a, char op, int64_t b) { return op == '+' ? a + b : op == '-' ? a - b : a * b; }

void check_count(int64_t got, int64_t wanted, const char* task, const char* hint) {
  check(got == wanted, task, ": only ", got, " distinct problems found for n_problems = ", wanted, "; ", hint);
}

// One term of a countdown expression being built.
struct Term {
  int64_t value;
  std::string text;  // parenthesised unless a single number
  bool atom;
};

struct Expression {
  int64_t value = 0;
  std::string text;
  std::vector<std::string> steps;  // "a op b = c", in evaluation order
};

// Combines all `numbers` in a random order with random operations whose
// results are positive integers no larger than `cap`. nullopt when a draw
// found no valid operation for a pair.
std::optional<Expression> random_expression(const std::vector<int64_t>& numbers, int64_t cap, SeededRng& rng) {
  std::vector<Term> terms;
  for (int64_t n : numbers) terms.push_back({n, std::to_string(n), true});
  Expression e;
  while (terms.size() > 1) {
    size_t i = rng.below(terms.size());
    size_t j = rng.below(terms.size() - 1);
    if (j >= i) ++j;
    const Term& a = terms[i];
    const Term& b = terms[j];
    std::vector<char> ops;
    if (a.value + b.value <= cap) ops.push_back('+');
    if (a.value > b.value) ops.push_back('-');
    if (a.value <= cap / b.value) ops.push_back('*');
    if (b.value > 1 && a.value % b.value == 0) ops.push_back('/');
    if (ops.empty()) return std::nullopt;
    char op = ops[rng.below(ops.size())];
    int64_t v = op == '+' ? a.value + b.value : op == '-' ? a.value - b.value : op == '*' ? a.value * b.value : a.value / b.value;
    e.steps.push_back(str(a.value, " ", op, " ", b.value, " = ", v));
    Term t{v, "(" + a.text + " " + op + " " + b.text + ")", false};
    terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(std::max(i, j)));
    terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(std::min(i, j)));
    terms.push_back(std::move(t));
  }
  e.value = terms[0].value;
  e.text = terms[0].atom ? terms[0].text : terms[0].text.substr(1, terms[0].text.size() - 2);
  return e;
}

std::string join_numbers(const std::vector<int64_t>& numbers) {
  std::string out;
  for (size_t i = 0; i < numbers.size(); ++i) out += (i ? ", " : "") + std::to_string(numbers[i]);
  return out;
}

std::string arithmetic_response(const Json& r, int64_t answer, bool worked) {
  if (!worked) return str("#### ", answer);
  return str(r["a"].get<int64_t>(), " ", r["op"].get<std::string>(), " ", r["b"].get<int64_t>(), " = ", answer, ". #### ",
             answer);
}

std::string countdown_response(const std::vector<std::string>& steps, const std::string& expression) {
  std::string out;
  for (const std::string& s : steps) out += s + ". ";
  return out + "#### " + expression;
}

}  // namespace

std::vector<PromptExample> generate_arithmetic(const ArithmeticOptions& o, uint64_t seed) {
  check(o.n_problems > 0, "arithmetic.n_problems must be positive (got ", o.n_problems, ")");
  check(o.min_digits >= 1 && o.min_digits <= 9, "arithmetic.min_digits must be in 1..9 (got ", o.min_digits, ")");
  check(o.max_digits >= o.min_digits && o.max_digits <= 9, "arithmetic.max_digits must be in min_digits..9 (got ",
        o.max_digits, ")");
  check(!o.operations.empty() && o.operations.find_first_not_of("+-*") == std::string::npos,
        "arithmetic.operations must be a non-empty string of '+', '-', '*' (got \"", o.operations, "\")");
  std::string ops;
  for (char c : std::string("+-*"))
    if (o.operations.find(c) != std::string::npos) ops += c;

  SeededRng rng(derive_seed(seed, "arithmetic"));
  std::set<std::string> seen;
  std::vector<PromptExample> out;
  for (int64_t draw = 0; draw < o.n_problems * kDrawsPerProblem && static_cast<int64_t>(out.size()) < o.n_problems;
       ++draw) {
    char op = ops[rng.below(ops.size())];
    int64_t a = random_operand(rng, static_cast<int>(rng.uniform_int(o.min_digits, o.max_digits)));
    int64_t b = random_operand(rng, static_cast<int>(rng.uniform_int(o.min_digits, o.max_digits)));
    if (op == '-' && !o.allow_negative && a < b) std::swap(a, b);
    std::string text = str(a, " ", op, " ", b);
    if (!seen.insert(text).second) continue;
    int64_t answer = arithmetic_answer(a, op, b);
    PromptExample e;
    e.id = str("arithmetic:", out.size());
    e.where = str("arithmetic #", out.size());
    e.raw_prompt = "What is " + text + "?";
    e.reference = std::to_string(answer);
    e.record = {{"task", "arithmetic"}, {"a", a}, {"b", b}, {"op", std::string(1, op)}, {"answer", answer}};
    out.push_back(std::move(e));
  }
  check_count(static_cast<int64_t>(out.size()), o.n_problems, "arithmetic",
              "allow more digits or operations, or ask for fewer problems");
  return out;
}

std::vector<PromptExample> generate_countdown(const CountdownOptions& o, uint64_t seed) {
  check(o.n_problems > 0, "countdown.n_problems must be positive (got ", o.n_problems, ")");
  check(o.n_numbers >= 2 && o.n_numbers <= 6, "countdown.n_numbers must be in 2..6 (got ", o.n_numbers, ")");
  check(o.max_number >= 1 && o.max_number <= 1000, "countdown.max_number must be in 1..1000 (got ", o.max_number, ")");
  check(o.max_target >= 1 && o.max_target <= 1000000, "countdown.max_target must be in 1..1000000 (got ", o.max_target,
        ")");

  SeededRng rng(derive_seed(seed, "countdown"));
  std::set<std::vector<int64_t>> seen;  // sorted numbers, then the target
  std::vector<PromptExample> out;
  for (int64_t draw = 0; draw < o.n_problems * kDrawsPerProblem && static_cast<int64_t>(out.size()) < o.n_problems;
       ++draw) {
    std::vector<int64_t> numbers(static_cast<size_t>(o.n_numbers));
    for (int64_t& n : numbers) n = rng.uniform_int(1, o.max_number);
    std::optional<Expression> e = random_expression(numbers, o.max_target, rng);
    if (!e) continue;
    std::vector<int64_t> key = numbers;
    std::sort(key.begin(), key.end());
    key.push_back(e->value);
    if (!seen.insert(key).second) continue;
    PromptExample p;
    p.id = str("countdown:", out.size());
    p.where = str("countdown #", out.size());
    p.raw_prompt = str("Using the numbers ", join_numbers(numbers), ", write an expression that equals ", e->value,
                       ". You may use +, -, *, / and parentheses, and each number at most once.");
    p.reference = e->text;
    p.record = {{"task", "countdown"}, {"numbers", numbers}, {"target", e->value}, {"solution", e->text}, {"steps", e->steps}};
    out.push_back(std::move(p));
  }
  check_count(static_cast<int64_t>(out.size()), o.n_problems, "countdown",
              "raise max_number, max_target or n_numbers, or ask for fewer problems");
  return out;
}

std::vector<PromptExample> generate_guess(const GuessTaskOptions& o, uint64_t seed) {
  check(o.n_problems > 0, "guess.n_problems must be positive (got ", o.n_problems, ")");
  check(o.max_number >= 2 && o.max_number <= 1000000, "guess.max_number must be in 2..1000000 (got ", o.max_number, ")");
  SeededRng rng(derive_seed(seed, "guess"));
  std::vector<PromptExample> out;
  for (int64_t i = 0; i < o.n_problems; ++i) {
    const int64_t secret = rng.uniform_int(1, o.max_number);
    PromptExample e;
    e.id = str("guess:", i);
    e.where = str("guess #", i);
    e.raw_prompt = str("I am thinking of a number from 1 to ", o.max_number,
                       ". Guess it: answer with one number each turn.");
    e.reference = std::to_string(secret);
    e.record = {{"task", "guess"}, {"secret", secret}, {"low", 1}, {"high", o.max_number}};
    out.push_back(std::move(e));
  }
  return out;
}

GuessTaskOptions guess_options_from_json(const Json& t, const std::string& src) {
  check_known_keys(t, {"n_problems", "max_number"}, src);
  GuessTaskOptions g;
  g.n_problems = json_get_or(t, "n_problems", g.n_problems, src);
  g.max_number = json_get_or(t, "max_number", g.max_number, src);
  return g;
}

ArithmeticOptions arithmetic_options_from_json(const Json& t, const std::string& src) {
  check_known_keys(t, {"n_problems", "min_digits", "max_digits", "operations", "allow_negative"}, src);
  ArithmeticOptions a;
  a.n_problems = json_get_or(t, "n_problems", a.n_problems, src);
  a.min_digits = json_get_or(t, "min_digits", a.min_digits, src);
  a.max_digits = json_get_or(t, "max_digits", a.max_digits, src);
  a.operations = json_get_or(t, "operations", a.operations, src);
  a.allow_negative = json_get_or(t, "allow_negative", a.allow_negative, src);
  return a;
}

CountdownOptions countdown_options_from_json(const Json& t, const std::string& src) {
  check_known_keys(t, {"n_problems", "n_numbers", "max_number", "max_target"}, src);
  CountdownOptions c;
  c.n_problems = json_get_or(t, "n_problems", c.n_problems, src);
  c.n_numbers = json_get_or(t, "n_numbers", c.n_numbers, src);
  c.max_number = json_get_or(t, "max_number", c.max_number, src);
  c.max_target = json_get_or(t, "max_target", c.max_target, src);
  return c;
}

WrongStyle parse_wrong_style(const std::string& name) {
  if (name == "offset") return WrongStyle::Offset;
  if (name == "drop_carry") return WrongStyle::DropCarry;
  fail("wrong_style must be \"offset\" or \"drop_carry\" (got \"", name, "\")");
}

int64_t carry_free_answer(int64_t a, char op, int64_t b) {
  check(a >= 0 && b >= 0 && (op == '+' || (op == '-' && a >= b)),
        "carry_free_answer: needs a, b >= 0 and op '+', or op '-' with a >= b (got ", a, " ", op, " ", b, ")");
  int64_t out = 0, place = 1;
  while (a > 0 || b > 0) {
    int64_t da = a % 10, db = b % 10;
    out += place * (op == '+' ? (da + db) % 10 : (da >= db ? da - db : db - da));
    a /= 10;
    b /= 10;
    place *= 10;
  }
  return out;
}

ColumnSum column_sum(int64_t a, int64_t b, bool forget_carry) {
  check(a >= 0 && b >= 0, "column_sum: needs a, b >= 0 (got ", a, " + ", b, ")");
  std::string text;
  int64_t answer = 0, place = 1, carry = 0;
  do {
    const int64_t da = a % 10, db = b % 10, s = da + db + (forget_carry ? 0 : carry);
    a /= 10;
    b /= 10;
    const bool last = a == 0 && b == 0;
    text += str(text.empty() ? "" : ", ", da, "+", db, carry && !forget_carry ? "+1" : "", "=", s);
    answer += place * (last ? s : s % 10);
    carry = s >= 10;
    place *= 10;
  } while (a > 0 || b > 0);
  return {str(text, ". #### ", answer), answer};
}

namespace {

// The direct (single-turn) response to arithmetic record `r`, right or wrong
// in `style`; sets *correct.
std::string direct_arithmetic(const Json& r, bool wrong, WrongStyle style, bool worked, bool columns, SeededRng& rng,
                              bool* correct) {
  const int64_t a = r["a"].get<int64_t>(), b = r["b"].get<int64_t>();
  *correct = !wrong;
  if (columns) return column_sum(a, b, wrong).text;  // wrong: drop_carry (checked by the caller)
  int64_t answer = r["answer"].get<int64_t>();
  if (wrong && style == WrongStyle::DropCarry) {
    answer = carry_free_answer(a, r["op"].get<std::string>()[0], b);
  } else if (wrong) {
    const int64_t delta = rng.uniform_int(1, 10);
    answer += rng.below(2) ? delta : -delta;
  }
  return arithmetic_response(r, answer, worked);
}

// One response per problem, every seeded choice drawn from `seed`.
std::vector<SftExample> one_draw(const std::vector<PromptExample>& problems, const SyntheticSftOptions& o,
                                 uint64_t seed) {
  const double wrong_fraction = o.wrong_fraction, tool_fraction = o.tool_fraction;
  const WrongStyle style = o.style;
  const bool worked = o.worked;
  check(wrong_fraction >= 0.0 && wrong_fraction <= 1.0, "wrong_fraction must be in [0, 1] (got ", wrong_fraction, ")");
  check(tool_fraction >= 0.0 && tool_fraction <= 1.0, "tool_fraction must be in [0, 1] (got ", tool_fraction, ")");
  check(o.feedback_fraction >= 0.0 && o.feedback_fraction <= 1.0, "feedback_fraction must be in [0, 1] (got ",
        o.feedback_fraction, ")");
  check(!o.columns || (worked && (style == WrongStyle::DropCarry || wrong_fraction == 0) && tool_fraction == 0),
        "columns shows a sum worked column by column, right or with its carries dropped: it needs worked = true, ",
        "wrong_style = \"drop_carry\" (with wrong_fraction > 0), and no tool_fraction");
  check(o.feedback_fraction == 0 || o.feedback_text.find("{critique}") == std::string::npos || o.critique,
        "feedback_text has {critique}: it needs a critic to write it ([critic])");
  check(o.feedback_prefix.empty() || (o.feedback_prefix.find("{critique}") != std::string::npos && o.critique),
        "feedback_prefix puts the critic's words on each target before its prompt: it needs {critique} and a critic "
        "([critic])");
  // Problems answered with the calculator, in a seeded choice.
  std::vector<bool> tool(problems.size(), false);
  {
    const std::vector<size_t> order = shuffled_indices(problems.size(), derive_seed(seed, "sft-tool"));
    const size_t n_tool = static_cast<size_t>(std::llround(tool_fraction * static_cast<double>(problems.size())));
    for (size_t i = 0; i < n_tool; ++i) tool[order[i]] = true;
  }
  // Problems shown as wrong answer -> feedback -> right answer (not the tool
  // ones; with columns, sums with a carry to drop).
  std::vector<bool> feedback(problems.size(), false);
  {
    const auto can_show = [&](size_t i) {
      if (tool[i]) return false;
      if (!o.columns) return true;
      const Json& r = problems[i].record;
      if (r.value("task", "") != "arithmetic" || r.value("op", "") != "+") return false;
      const int64_t a = r["a"].get<int64_t>(), b = r["b"].get<int64_t>();
      return a >= 0 && b >= 0 && column_sum(a, b, true).answer != column_sum(a, b, false).answer;
    };
    const std::vector<size_t> order = shuffled_indices(problems.size(), derive_seed(seed, "sft-feedback"));
    const size_t n = static_cast<size_t>(std::llround(o.feedback_fraction * static_cast<double>(problems.size())));
    for (size_t k = 0, taken = 0; k < order.size() && taken < n; ++k)
      if (can_show(order[k])) feedback[order[k]] = true, ++taken;
  }
  SeededRng feedback_rng(derive_seed(seed, "sft-feedback-answers"));
  // Problems that may be made wrong, in a seeded order.
  std::vector<size_t> eligible;
  for (size_t i : shuffled_indices(problems.size(), derive_seed(seed, "sft-wrong"))) {
    if (style == WrongStyle::Offset) {
      eligible.push_back(i);
      continue;
    }
    const Json& r = problems[i].record;
    check(r.value("task", "") == "arithmetic", problems[i].where,
          ": wrong_style \"drop_carry\" applies to arithmetic problems only (use \"offset\")");
    const std::string op = r["op"].get<std::string>();
    const int64_t a = r["a"].get<int64_t>(), b = r["b"].get<int64_t>();
    check(!o.columns || (op == "+" && a >= 0 && b >= 0), problems[i].where,
          ": columns applies to sums of non-negative numbers (got ", a, " ", op, " ", b, ")");
    const int64_t dropped = o.columns ? column_sum(a, b, true).answer
                            : (op == "+" || (op == "-" && a >= b)) && a >= 0 && b >= 0 ? carry_free_answer(a, op[0], b)
                                                                                       : r["answer"].get<int64_t>();
    if (dropped != r["answer"].get<int64_t>()) eligible.push_back(i);
  }
  size_t n_wrong = static_cast<size_t>(std::llround(wrong_fraction * static_cast<double>(eligible.size())));
  std::vector<bool> wrong(problems.size(), false);
  for (size_t i = 0; i < n_wrong; ++i) wrong[eligible[i]] = true;

  SeededRng rng(derive_seed(seed, "sft-responses"));
  std::vector<SftExample> out;
  out.reserve(problems.size());
  for (size_t i = 0; i < problems.size(); ++i) {
    const PromptExample& p = problems[i];
    const Json& r = p.record;
    std::string task = r.value("task", "");
    SftExample s;
    s.id = p.id;
    s.raw_prompt = p.raw_prompt;
    s.prompt = p.prompt;
    s.where = p.where;
    if (task == "arithmetic" && tool[i]) {
      const CalculatorSyntax& x = o.calculator;
      const int64_t answer = r["answer"].get<int64_t>();
      s.turns = {{true, str(x.call_open, r["a"].get<int64_t>(), r["op"].get<std::string>(), r["b"].get<int64_t>(), x.call_close)},
                 {false, str(x.result_open, answer, x.result_close)},
                 {true, str(" #### ", answer)}};
      for (const SftTurn& t : s.turns) s.response += t.text;
    } else if (task == "arithmetic" && feedback[i]) {
      const int64_t answer = r["answer"].get<int64_t>();
      std::string wrong_text, right_text;
      if (o.columns) {
        const int64_t a = r["a"].get<int64_t>(), b = r["b"].get<int64_t>();
        wrong_text = column_sum(a, b, true).text, right_text = column_sum(a, b, false).text;
      } else {
        const int64_t delta = feedback_rng.uniform_int(1, 10);
        const int64_t wrong_answer = answer + (feedback_rng.below(2) ? delta : -delta);
        wrong_text = arithmetic_response(r, wrong_answer, worked), right_text = arithmetic_response(r, answer, worked);
      }
      std::string text =
          replace_all(replace_all(o.feedback_text, "{answer}", std::to_string(answer)), "{prompt}", p.prompt);
      if (text.find("{critique}") != std::string::npos) text = replace_all(text, "{critique}", o.critique(p, wrong_text));
      s.turns = {{false, wrong_text}, {false, text}, {true, right_text}};
      for (const SftTurn& t : s.turns) s.response += t.text;
    } else if (task == "arithmetic") {
      s.response = direct_arithmetic(r, wrong[i], style, worked, o.columns, rng, &s.correct);
    } else if (task == "countdown") {
      CountdownProblem problem = countdown_problem_from_record(r, p.where);
      std::vector<std::string> steps = r["steps"].get<std::vector<std::string>>();
      std::string expression = r["solution"].get<std::string>();
      // A wrong attempt: another expression over the same numbers (tries a few draws to miss the target).
      for (int attempt = 0; wrong[i] && attempt < 100; ++attempt) {
        std::optional<Expression> e = random_expression(problem.numbers, INT32_MAX, rng);
        if (e && e->value != problem.target) {
          steps = e->steps;
          expression = e->text;
          break;
        }
      }
      s.response = countdown_response(steps, expression);
      s.correct = verify_countdown(expression, problem).correct;
    } else {
      fail(p.where, ": cannot write an SFT response for task '", task, "' (expected arithmetic or countdown)");
    }
    check(!tool[i] || task == "arithmetic", p.where, ": tool_fraction applies to arithmetic problems only");
    if (!o.feedback_prefix.empty()) {
      // Offline feedback-conditional targets: the critic's words on the trained answer, before the prompt.
      std::string answer = s.response;
      for (const SftTurn& t : s.turns)
        if (t.policy) answer = t.text;
      s.prompt = replace_all(o.feedback_prefix, "{critique}", o.critique(p, answer)) + s.prompt;
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

std::vector<SftExample> synthetic_sft_examples(const std::vector<PromptExample>& problems,
                                               const SyntheticSftOptions& o) {
  check(o.draws >= 1, "draws must be >= 1 (got ", o.draws, ")");
  std::vector<SftExample> out = one_draw(problems, o, o.seed);
  for (int64_t d = 1; d < o.draws; ++d)
    for (SftExample& e : one_draw(problems, o, derive_seed(o.seed, "sft-draw", static_cast<uint64_t>(d)))) {
      e.id += str("#", d);
      out.push_back(std::move(e));
    }
  return out;
}

}  // namespace rlf
