// rlf_math_verify_pairs: a small helper for scripts/oracle/compare_math_verify.py
// and for trying pairs by hand.
//   rlf_math_verify_pairs PAIRS.jsonl     one {"correct","extracted","reason"} line per
//                                         {"prediction","reference"} line
//   rlf_math_verify_pairs --pair PRED REF one verdict for one pair
#include <cstring>
#include <iostream>

#include "rewards/math/math_dataset.h"

int main(int argc, char** argv) {
  try {
    if (argc == 4 && std::strcmp(argv[1], "--pair") == 0) {
      rlf::math::MathVerdict v = rlf::math::verify_math(argv[2], argv[3]);
      std::cout << rlf::Json{{"correct", v.correct}, {"extracted", v.extracted}, {"reason", v.reason}}.dump() << "\n";
      return 0;
    }
    if (argc != 2) {
      std::cerr << "usage: rlf_math_verify_pairs PAIRS.jsonl | --pair PREDICTION REFERENCE\n";
      return 2;
    }
    for (const rlf::math::MathVerdict& v : rlf::math::verify_pairs_file(argv[1])) {
      std::cout << rlf::Json{{"correct", v.correct}, {"extracted", v.extracted}, {"reason", v.reason}}.dump(-1, ' ', false, rlf::Json::error_handler_t::replace) << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
