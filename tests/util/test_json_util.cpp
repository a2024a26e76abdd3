// util/json_util: errors name the source; json_line writes one line and
// survives arbitrary bytes.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace rlf
