// Tasks rlf generates itself, so the default run needs no external data.
//
//   arithmetic  "What is 37 + 48?"                reference "85"
//               record {"task":"arithmetic","a":37,"b":48,"op":"+","answer":85}
//   countdown   "Using the numbers 2, 15, 9, 21, write an expression that
//               equals 60. ..."                   reference "(21 + (2 * 15)) + 9"
//               record {"task":"countdown","numbers":[2,15,9,21],"target":60,
//                       "solution":"(21 + (2 * 15)) + 9",
//                       "steps":["2 * 15 = 30","21 + 30 = 51","51 + 9 = 60"]}
//               (verified by countdown.h's verify_countdown)
//   guess       "I am thinking of a number from 1 to 16. Guess it: answer
//               with one number each turn."       reference "11"
//               record {"task":"guess","secret":11,"low":1,"high":16}
//               (a multi-turn game: env/guess_env.h answers each guess)
//
// Generation is deterministic by seed and portable (data/seeded_rng.h), and
// the problems of one call are distinct, so a train/eval split of them is
// disjoint. Countdown problems are built from a random expression over all
// the numbers whose every intermediate is a positive integer, so each has a
// solution. synthetic_sft_examples() turns problems into (prompt, response)
// pairs in the answer format ("37 + 48 = 85. #### 85"), a chosen share of
// them deliberately wrong, for an SFT warm start that is weak but not hopeless.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/examples.h"
#include "util/json_util.h"

namespace rlf {

struct ArithmeticOptions {
  int64_t n_problems = 2000;     // distinct problems to generate
  int min_digits = 1;            // digits per operand, at least (1..9)
  int max_digits = 2;            // digits per operand, at most (min_digits..9)
  std::string operations = "+-*";  // any of '+', '-', '*'
  bool allow_negative = false;   // false: "a - b" always has a >= b
};

struct GuessTaskOptions {
  int64_t n_problems = 1000;  // games to generate (each secret drawn independently: they repeat; every game of
                              // one max_number has the same prompt text, the secret lives in the record)
  int64_t max_number = 16;    // secrets are drawn from [1, max_number] (2..1000000)
};

// The calculator tool's syntax (env/calculator_env.h), shared with the SFT
// transcripts that show a policy how to call it.
struct CalculatorSyntax {
  std::string call_open = "<calc>";
  std::string call_close = "</calc>";
  std::string result_open = "<result>";
  std::string result_close = "</result>";
};

struct CountdownOptions {
  int64_t n_problems = 2000;  // distinct problems to generate
  int n_numbers = 4;          // numbers per problem (2..6)
  int64_t max_number = 25;    // numbers are drawn from [1, max_number] (1..1000)
  int64_t max_target = 100;   // targets lie in [1, max_target]
};

// Throw rlf::Error naming the field when an option is out of range, or when
// the options allow fewer distinct problems than n_problems.
std::vector<PromptExample> generate_arithmetic(const ArithmeticOptions& options, uint64_t seed);
std::vector<PromptExample> generate_countdown(const CountdownOptions& options, uint64_t seed);
std::vector<PromptExample> generate_guess(const GuessTaskOptions& options, uint64_t seed);

// Options from a config table ({"n_problems": 500, "operations": "+-"});
// unknown keys and wrong types are errors naming `source` and the key.
ArithmeticOptions arithmetic_options_from_json(const Json& table, const std::string& source);
CountdownOptions countdown_options_from_json(const Json& table, const std::string& source);
GuessTaskOptions guess_options_from_json(const Json& table, const std::string& source);

// How deliberately wrong SFT responses are wrong.
//   offset      an arithmetic answer off by 1..10 (either sign); a countdown
//               expression over the same numbers that misses the target.
//               round(wrong_fraction * n) of all responses are wrong.
//   drop_carry  a systematic mistake: the arithmetic answer is worked digit by
//               digit without carries ("37 + 48 = 75") or borrows
//               ("52 - 17 = 45"). Only '+' and '-' problems whose answer that
//               changes are eligible; round(wrong_fraction * eligible) of them
//               are wrong. With columns (below) every carry is dropped
//               from the worked columns instead. Countdown problems cannot use it.
enum class WrongStyle { Offset, DropCarry };
WrongStyle parse_wrong_style(const std::string& name);  // "offset" | "drop_carry"; else an error listing them

// (prompt, response) pairs for generated problems (records with "task"
// arithmetic or countdown), with the problems' raw_prompt and prompt (as
// rendered by the dataset that holds them). The wrong responses (see
// WrongStyle) are chosen by `seed`; SftExample::correct says which.
// `worked` = false gives arithmetic answers without the worked equation
// ("#### 85" instead of "37 + 48 = 85. #### 85"); countdown keeps its steps.
// `tool_fraction` (arithmetic only): the share of responses, chosen by
// `seed` independently of the wrong ones, that use the calculator tool
// instead of answering directly — a multi-turn target (SftExample::turns):
// the call "<calc>a op b</calc>", the tool's observation "<result>v</result>"
// and the answer "#### v". Those are never wrong, so with both fractions set
// fewer than round(wrong_fraction * n) responses end up wrong. Feedback
// targets (feedback_fraction) end with the right answer, too.
struct SyntheticSftOptions {
  double wrong_fraction = 0.0;          // share of deliberately wrong responses, in [0, 1]
  uint64_t seed = 0;                    // chooses the wrong, tool and feedback responses
  WrongStyle style = WrongStyle::Offset;
  bool worked = true;                   // arithmetic: "37 + 48 = 85. #### 85" (true) or "#### 85"
  // Arithmetic '+': each sum worked column by column, units first
  // ("7+8=15, 3+4+1=8. #### 85", column_sum below), so a dropped carry is a
  // visible step ("7+8=15, 3+4=7. #### 75"). Needs wrong_style drop_carry
  // (the wrong responses drop every carry) and no tool targets. Its feedback
  // targets (feedback_fraction) are drawn from sums with a carry: the working
  // with the carries dropped, `feedback_text`, then the right working.
  bool columns = false;
  double tool_fraction = 0.0;           // arithmetic: share of targets that call the calculator
  // Arithmetic: share of targets (chosen by `seed`, apart from the tool ones)
  // that show a wrong answer, then `feedback_text`, then the right answer —
  // a multi-turn target whose first two stretches are never trained on, so
  // the policy learns to answer after feedback (the format of the feedback
  // methods of docs/feedback.md). {answer} and {prompt} in the text are
  // replaced by the right answer and the prompt, {critique} by what
  // `critique` writes about the wrong answer (a critic's words: the warm
  // start teaches the policy to read the critiques RL will show it).
  double feedback_fraction = 0.0;
  std::string feedback_text = "\nThat is not right. Try again.\n";
  // Offline feedback-conditional targets (FCP's warm start, train/feedback_conditioning.h): "" = none; else
  // every target's prompt is this text, {critique} replaced by the critic's words on the target's trained
  // answer (the last trained turn of a multi-turn target), followed by the prompt. With "{critique}\n" and
  // the columns critic, a right working reads "Correct.\n<prompt>", one with its carry dropped "The tens
  // column drops the carry: ...\n<prompt>"; an RL run's prompts then carry "Correct.\n" (fcp.condition).
  std::string feedback_prefix;
  // Writes the critique of `response` to `problem` for {critique} (throws
  // when it cannot); unset = {critique} is an error.
  std::function<std::string(const PromptExample& problem, const std::string& response)> critique;
  // Responses per problem, each with its own seeded choices (wrong, tool,
  // feedback): with draws > 1 a mistake is the demonstrator's habit, made on
  // about wrong_fraction of a problem's showings, not a fixed set of
  // problems always answered wrong (which a small policy memorises). Draw 0
  // is the draws = 1 output; draw d's ids end in "#d".
  int64_t draws = 1;
  CalculatorSyntax calculator;          // tool targets: call and result markup (the env's format)
};

std::vector<SftExample> synthetic_sft_examples(const std::vector<PromptExample>& problems,
                                               const SyntheticSftOptions& options);

// a op b worked digit by digit with no carry (op '+') or borrow (op '-', a >= b >= 0).
int64_t carry_free_answer(int64_t a, char op, int64_t b);

// a + b (a, b >= 0) worked column by column, units first: "7+8=15, 3+4+1=8.
// #### 85" (the last column's whole sum, the others' units digit). With
// forget_carry every carry is left out — "7+8=15, 3+4=7. #### 75", "9+5=14,
// 9+3=12. #### 124" — the mistake of a demonstrator who forgets to carry.
struct ColumnSum {
  std::string text;  // the response, ending in "#### <answer>"
  int64_t answer = 0;
};
ColumnSum column_sum(int64_t a, int64_t b, bool forget_carry);

}  // namespace rlf
