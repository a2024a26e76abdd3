// The layer rule of docs/DESIGN.md ("Floors"), read from that document and
// enforced on every #include of the sources: a folder includes only folders
// on its own floor's lower floors, or its own folder. The document's line
// is the one declaration of the floors; this test parses it, so changing the
// rule is an edit of DESIGN.md that this test then holds the code to.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "tests/support/test_env.h"

namespace rlf {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "Floors (lowest first): `util` → `config`, `tokenizer` → ...": folder → floor (0 lowest).
std::map<std::string, int> floors_of_design() {
  const std::string design = read_text(test::source_path("docs/DESIGN.md"));
  const auto start = design.find("Floors (lowest first):");
  EXPECT_NE(start, std::string::npos) << "docs/DESIGN.md lost its line 'Floors (lowest first): ...'";
  if (start == std::string::npos) return {};
  const std::string line = design.substr(start, design.find('\n', start) - start);
  std::map<std::string, int> floor;
  int index = 0;
  // Floors are separated by "→" (UTF-8 E2 86 92); each names its folders in backquotes.
  const std::string arrow = "\xE2\x86\x92";
  const std::string rest = line.substr(line.find(':') + 1);
  const std::regex name("`([a-z_]+)`");
  for (size_t pos = 0;; ++index) {
    const size_t next = rest.find(arrow, pos);
    const std::string part = rest.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    for (std::sregex_iterator it(part.begin(), part.end(), name), end; it != end; ++it) floor[(*it)[1]] = index;
    if (next == std::string::npos) break;
    pos = next + arrow.size();
  }
  return floor;
}

TEST(Layers, DesignNamesEveryTopLevelSourceFolder) {
  const auto floor = floors_of_design();
  ASSERT_GE(floor.size(), 10u);
  for (const auto& entry : fs::directory_iterator(test::source_path(""))) {
    const std::string dir = entry.path().filename().string();
    if (!entry.is_directory() || !fs::exists(entry.path() / "CMakeLists.txt")) continue;
    if (dir == "tests" || dir == "bench" || dir == "cmake" || dir.rfind("build", 0) == 0) continue;
    EXPECT_TRUE(floor.count(dir)) << "folder '" << dir << "' has no floor in docs/DESIGN.md's layer rule";
  }
}

TEST(Layers, NoFolderIncludesAFloorAboveOrBesideIt) {
  const auto floor = floors_of_design();
  ASSERT_FALSE(floor.empty());
  const std::regex include("#include \"([a-z_]+)/");
  int n_includes = 0;
  for (const auto& [dir, level] : floor) {
    const fs::path root = test::source_path(dir);
    if (!fs::is_directory(root)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".h" && ext != ".cpp" && ext != ".cu") continue;
      const std::string text = read_text(entry.path());
      for (std::sregex_iterator it(text.begin(), text.end(), include), end; it != end; ++it) {
        const std::string target = (*it)[1];
        if (target == dir || !floor.count(target)) continue;
        ++n_includes;
        EXPECT_LT(floor.at(target), level)
            << fs::relative(entry.path(), test::source_path("")).string() << " includes " << target
            << "/ (floor " << floor.at(target) << "), but " << dir << "/ is on floor " << level
            << ": a folder includes only lower floors (docs/DESIGN.md, Floors)";
      }
    }
  }
  EXPECT_GT(n_includes, 100) << "the scan found too few cross-folder includes to be reading the sources";
}

}  // namespace
}  // namespace rlf
