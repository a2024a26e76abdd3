// Config keys bound to struct members (config/config_binding.h): the schema's
// types and defaults come from the members, one table sets every member from
// a validated config, and the schema's errors name the key.
#include <gtest/gtest.h>

#include "config/config_binding.h"
#include "config/enum_names.h"
#include "tests/support/test_env.h"

namespace rlf {
namespace {

using test::error_of;

enum class Shape { Constant, Cosine };
const char* shape_name(Shape s) { return s == Shape::Cosine ? "cosine" : "constant"; }
Shape parse_shape(const std::string& name) { return name == "cosine" ? Shape::Cosine : Shape::Constant; }

enum class Keep { Best, All };
const EnumNames<Keep>& keep_names() {
  static const EnumNames<Keep> names{"run.keep", {{Keep::Best, "best"}, {Keep::All, "all"}}};
  return names;
}

struct Inner {
  double lr = 1e-3;
  Shape shape = Shape::Cosine;
  Keep keep = Keep::Best;
};

struct Options {
  int64_t steps = 100;
  uint64_t seed = 7;
  bool in_reward = false;
  std::filesystem::path out_dir = "runs/x";
  std::vector<std::string> stop = {"\n\n"};
  std::vector<double> betas = {0.9, 0.999};
  Json extra = Json::array();
  Inner inner;
  bool has_data = false;
  std::string data_path;
};

const ConfigBindings<Options>& bindings() {
  static const ConfigBindings<Options> b = {
      field("run.steps", "steps", "trainer steps", RLF_MEMBER(steps)).in(1, 1e12),
      field("run.seed", "", "seed", RLF_MEMBER(seed)),
      two_way("run.kl_placement", "", "where the KL goes", RLF_MEMBER(in_reward), "loss", "reward"),
      field("run.out_dir", "", "output directory", RLF_MEMBER(out_dir)),
      field("run.stop", "", "stop strings", RLF_MEMBER(stop)),
      field("optim.betas", "", "Adam betas", RLF_MEMBER(betas)),
      field("extra", "", "anything", RLF_MEMBER(extra)),
      field("optim.lr", "", "learning rate", RLF_MEMBER(inner.lr)).in(1e-30, 10),
      choice("optim.shape", "", "schedule shape", RLF_MEMBER(inner.shape), shape_name, parse_shape,
             {"constant", "cosine"}),
      choice("run.keep", "", "which episodes to keep", RLF_MEMBER(inner.keep), keep_names()),
      section("data", Json::object(), "the dataset",
              [](Options& o, const Json& v, const std::string& source) {
                o.has_data = !v.empty();
                if (o.has_data) o.data_path = source + ":" + v.at("path").get<std::string>();
              }),
  };
  return b;
}

TEST(ConfigBinding, SchemaTakesTypesAndDefaultsFromTheMembers) {
  const ConfigSchema s = schema_of(bindings());
  ASSERT_EQ(s.size(), 11u);
  auto at = [&](const std::string& key) -> const SchemaEntry& {
    for (const SchemaEntry& e : s)
      if (e.key == key) return e;
    throw std::runtime_error("no key " + key);
  };
  EXPECT_EQ(at("run.steps").type, OptionType::Int);
  EXPECT_EQ(at("run.steps").default_value, Json(100));
  EXPECT_EQ(at("run.steps").unit, "steps");
  EXPECT_EQ(at("run.steps").range, std::make_pair(1.0, 1e12));
  EXPECT_EQ(at("run.seed").type, OptionType::Int);
  EXPECT_TRUE(at("run.seed").default_value.is_number_integer());
  EXPECT_EQ(at("run.seed").default_value.get<int64_t>(), 7);
  EXPECT_EQ(at("run.kl_placement").type, OptionType::String);
  EXPECT_EQ(at("run.kl_placement").default_value, Json("loss"));
  EXPECT_EQ(at("run.kl_placement").choices, (std::vector<std::string>{"loss", "reward"}));
  EXPECT_EQ(at("run.out_dir").type, OptionType::String);
  EXPECT_EQ(at("run.out_dir").default_value, Json("runs/x"));
  EXPECT_EQ(at("run.stop").type, OptionType::StringList);
  EXPECT_EQ(at("optim.betas").type, OptionType::FloatList);
  EXPECT_EQ(at("extra").type, OptionType::Any);
  EXPECT_EQ(at("optim.lr").type, OptionType::Float);
  EXPECT_DOUBLE_EQ(at("optim.lr").default_value.get<double>(), 1e-3);
  EXPECT_EQ(at("optim.shape").default_value, Json("cosine"));
  EXPECT_EQ(at("run.keep").type, OptionType::String);
  EXPECT_EQ(at("run.keep").default_value, Json("best"));
  EXPECT_EQ(at("run.keep").choices, (std::vector<std::string>{"best", "all"}));
  EXPECT_EQ(at("data").type, OptionType::Any);
  EXPECT_EQ(at("data").default_value, Json::object());

  // Defaults follow the struct they are read from.
  Options other;
  other.steps = 5;
  other.inner.shape = Shape::Constant;
  const ConfigSchema s2 = schema_of(bindings(), other);
  EXPECT_EQ(s2[0].default_value, Json(5));
  EXPECT_EQ(s2[8].default_value, Json("constant"));
}

TEST(ConfigBinding, ApplySetsEveryMember) {
  const ConfigSchema s = schema_of(bindings());
  const Json in = {{"run", {{"steps", 3}, {"seed", 42}, {"kl_placement", "reward"}, {"out_dir", "/tmp/o"}, {"keep", "all"}}},
                   {"optim", {{"lr", 2}, {"shape", "constant"}, {"betas", {0.5, 1}}}},
                   {"extra", {{"a", 1}}},
                   {"data", {{"path", "p.jsonl"}}}};
  Options o;
  apply_bindings(bindings(), validate_config(in, s, "c.toml"), o, "c.toml");
  EXPECT_EQ(o.steps, 3);
  EXPECT_EQ(o.seed, 42u);
  EXPECT_TRUE(o.in_reward);
  EXPECT_EQ(o.out_dir, std::filesystem::path("/tmp/o"));
  EXPECT_EQ(o.stop, (std::vector<std::string>{"\n\n"}));  // the default, filled in
  EXPECT_EQ(o.betas, (std::vector<double>{0.5, 1.0}));
  EXPECT_EQ(o.extra, (Json{{"a", 1}}));
  EXPECT_DOUBLE_EQ(o.inner.lr, 2.0);
  EXPECT_EQ(o.inner.shape, Shape::Constant);
  EXPECT_EQ(o.inner.keep, Keep::All);
  EXPECT_TRUE(o.has_data);
  EXPECT_EQ(o.data_path, "c.toml:p.jsonl");

  // Nothing given: every member keeps (or gets) its default.
  Options d;
  d.steps = -1;
  d.in_reward = true;
  apply_bindings(bindings(), validate_config(Json::object(), s, "c.toml"), d, "c.toml");
  EXPECT_EQ(d.steps, 100);
  EXPECT_FALSE(d.in_reward);
  EXPECT_FALSE(d.has_data);
}

TEST(ConfigBinding, ErrorsNameTheKeyAndTheAcceptedValues) {
  const ConfigSchema s = schema_of(bindings());
  EXPECT_EQ(error_of([&] { validate_config({{"optim", {{"shape", "cosin"}}}}, s, "c.toml"); }),
            "c.toml: key 'optim.shape' must be one of constant, cosine, got \"cosin\"");
  EXPECT_EQ(error_of([&] { validate_config({{"run", {{"keep", "most"}}}}, s, "c.toml"); }),
            "c.toml: key 'run.keep' must be one of best, all, got \"most\"");
  EXPECT_EQ(error_of([&] { keep_names().parse("most"); }), "run.keep must be one of best, all (got \"most\")");
  EXPECT_EQ(keep_names().name(Keep::All), "all");
  EXPECT_EQ(error_of([&] { validate_config({{"run", {{"kl_placement", "both"}}}}, s, "c.toml"); }),
            "c.toml: key 'run.kl_placement' must be one of loss, reward, got \"both\"");
  Options o;  // an unsigned member refuses a negative value
  EXPECT_EQ(error_of([&] {
              apply_bindings(bindings(), validate_config({{"run", {{"seed", -1}}}}, s, "c.toml"), o, "c.toml");
            }),
            "c.toml: key 'run.seed' must be >= 0, got -1");
  EXPECT_EQ(error_of([&] { validate_config({{"run", {{"steps", 1.5}}}}, s, "c.toml"); }),
            "c.toml: key 'run.steps' must be an int, got float 1.5 (e.g. run.steps = 100)");
}

TEST(ConfigBinding, DuplicateKeysAreRejected) {
  const ConfigBindings<Options> twice = {
      field("run.steps", "", "a", RLF_MEMBER(steps)),
      field("run.steps", "", "b", RLF_MEMBER(steps)),
  };
  EXPECT_EQ(error_of([&] { schema_of(twice); }), "config schema: key 'run.steps' is declared twice");
}

}  // namespace
}  // namespace rlf
