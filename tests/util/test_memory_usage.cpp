// util/memory_usage.h: the per-phase peak follows what the phase touched,
// and the usable memory is a positive amount no larger than the machine's.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <vector>

#include "util/memory_usage.h"

namespace rlf {
namespace {

TEST(PeakRss, APhasePeakSeesWhatThePhaseTouchedAndForgetsWhatCameBefore) {
  PeakRss peak;
  const double base = current_rss_mb();
  ASSERT_GT(base, 0.0) << "/proc/self/status unreadable";
  {
    std::vector<char> big(256u << 20);  // 268 MB, touched page by page
    for (size_t i = 0; i < big.size(); i += 4096) big[i] = 1;
    peak.begin();  // the phase starts with the buffer resident
    EXPECT_GE(peak.peak_mb(), base + 250);
  }
  peak.begin();  // a new phase after the buffer is gone
  if (!peak.resets_work()) GTEST_SKIP() << "this kernel refuses /proc/self/clear_refs: peaks are the process's";
  EXPECT_LT(peak.peak_mb(), base + 100);
  {
    std::vector<char> mid(128u << 20);
    std::memset(mid.data(), 1, mid.size());
    EXPECT_GE(peak.peak_mb(), base + 120);
  }
  EXPECT_GE(peak.peak_mb(), base + 120);  // the mark stays until the next begin()
}

TEST(UsableMemory, PositiveAndAtMostThePhysicalMemory) {
  const int64_t phys = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  EXPECT_GT(usable_memory_bytes(), 0);
  EXPECT_LE(usable_memory_bytes(), phys);
}

}  // namespace
}  // namespace rlf
