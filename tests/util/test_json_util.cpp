// util/json_util: errors name the source; json_line writes one line and
// survives arbitrary bytes; NaN / Infinity as Python's json.dumps writes them
// are read as numbers (and only outside strings) and written back for messages.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/support/test_env.h"
#include "util/json_util.h"

namespace rlf {
namespace {

TEST(JsonUtil, JsonLineIsOneLineAndReplacesInvalidUtf8) {
  Json j{{"text", std::string("a\nb \xff\xfe end")}, {"n", 3}};
  const std::string line = json_line(j);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_NE(line.find("\\n"), std::string::npos);
  EXPECT_NE(line.find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD
  const Json back = parse_json(line, "line");
  EXPECT_EQ(back["n"], 3);
  EXPECT_EQ(json_line(Json{{"ok", "plain"}}), R"({"ok":"plain"})");
}

TEST(JsonUtil, ParseErrorsNameTheSource) {
  EXPECT_NE(test::error_of([] { parse_json("{\"a\": ", "'run.json'"); }).find("'run.json'"), std::string::npos);
}

// Written by Python 3.11: json.dumps({"scores": [1.5, float("nan"), float("inf"), -float("inf"), None],
//                                     "note": "NaN stays \"Infinity\" here"})
const char* kPythonLine = R"({"scores": [1.5, NaN, Infinity, -Infinity, null], "note": "NaN stays \"Infinity\" here"})";

TEST(JsonUtil, NanAndInfinityAsPythonWritesThemAreReadAsNumbers) {
  EXPECT_TRUE(Json::parse(kPythonLine, nullptr, false).is_discarded());  // what plain JSON parsing makes of it
  for (const Json& j : {parse_json_allowing_nan(kPythonLine, "reply"), try_parse_json_allowing_nan(kPythonLine)}) {
    ASSERT_TRUE(j.is_object()) << j.dump();
    const Json& s = j.at("scores");
    EXPECT_EQ(s.at(0).get<double>(), 1.5);
    EXPECT_TRUE(s.at(1).is_number_float() && std::isnan(s.at(1).get<double>()));
    EXPECT_EQ(s.at(2).get<double>(), std::numeric_limits<double>::infinity());
    EXPECT_EQ(s.at(3).get<double>(), -std::numeric_limits<double>::infinity());
    EXPECT_TRUE(s.at(4).is_null());
    EXPECT_EQ(j.at("note"), "NaN stays \"Infinity\" here");  // words inside strings are text
  }
  EXPECT_EQ(json_text_for_message(parse_json_allowing_nan(kPythonLine, "reply").at("scores")),
            "[1.5,NaN,Infinity,-Infinity,null]");
  EXPECT_EQ(json_text_for_message(Json(std::nan(""))), "NaN");
  EXPECT_EQ(json_line(Json(std::nan(""))), "null");
  EXPECT_EQ(json_text_for_message(Json{{"a", "x"}}), R"({"a":"x"})");
  // Standard JSON is read as it is.
  EXPECT_EQ(try_parse_json_allowing_nan(R"({"a": [1, "NaN"]})"), Json::parse(R"({"a": [1, "NaN"]})"));
}

TEST(JsonUtil, OnlyTheExactWordsOutsideStringsAreRead) {
  for (const char* bad : {"[nan]", "[NaNa]", "[Infinit]", "[+Infinity]", "[- Infinity]", "[1NaN]", "[NaN", "{NaN: 1}"}) {
    EXPECT_TRUE(try_parse_json_allowing_nan(bad).is_discarded()) << bad;
    EXPECT_NE(test::error_of([&] { parse_json_allowing_nan(bad, "'scorer reply'"); }).find("'scorer reply'"),
              std::string::npos)
        << bad;
  }
  // A syntax error after a NaN is reported at its byte in the text as written.
  const std::string err = test::error_of([] { parse_json_allowing_nan("[NaN, 1 2]", "line"); });
  EXPECT_NE(err.find("at byte 9"), std::string::npos) << err;
  // A string that equals the stand-in rlf reads NaN through is never taken for a number silently.
  const std::string tricky = R"(["\u0000rlf-non-finite:NaN", NaN])";
  EXPECT_TRUE(try_parse_json_allowing_nan(tricky).is_discarded());
  EXPECT_NE(test::error_of([&] { parse_json_allowing_nan(tricky, "line"); }).find("\\u0000"), std::string::npos);
  EXPECT_TRUE(try_parse_json_allowing_nan(R"(["\u0000rlf-non-finite:NaN"])").at(0).is_string());
}

}  // namespace
}  // namespace rlf
