#include "util/json_util.h"

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

}  // namespace rlf
