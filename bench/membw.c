/* Memory bandwidth of this machine, STREAM-style: arrays far larger than the
 * caches, OpenMP threads, best of 10 passes. Prints one JSON line:
 *   read_gb_s  (sum of one array: what a matrix-vector product streams)
 *   copy_gb_s  (b = a, counting bytes read + written, as STREAM does)
 *   triad_gb_s (a = b + s c)
 * Built and run by bench/single_stream.sh:
 *   gcc -O3 -march=native -fopenmp bench/membw.c -o membw && OMP_NUM_THREADS=2 ./membw [MiB per array]
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

/* 2 MiB pages where the kernel allows (transparent huge pages, "madvise"
 * mode): with 4 KiB pages the TLB misses, not the DRAM, bound a stream. */
static float* alloc_huge(long n) {
  const size_t huge = (size_t)2 << 20, len = ((size_t)n * sizeof(float) + huge - 1) / huge * huge;
  float* p = aligned_alloc(huge, len);
  if (p) madvise(p, len, MADV_HUGEPAGE);
  return p;
}

static double now(void) { return omp_get_wtime(); }

int main(int argc, char** argv) {
  const long mib = argc > 1 ? atol(argv[1]) : 512;
  const long n = mib * 1024 * 1024 / (long)sizeof(float);
  float* a = alloc_huge(n);
  float* b = alloc_huge(n);
  float* c = alloc_huge(n);
  if (!a || !b || !c) return 1;
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) a[i] = 1.0f, b[i] = 2.0f, c[i] = 0.5f;
  double best_read = 1e30, best_copy = 1e30, best_triad = 1e30, sink = 0;
  for (int rep = 0; rep < 10; ++rep) {
    double t = now(), s = 0;
#pragma omp parallel for simd reduction(+ : s) schedule(static)
    for (long i = 0; i < n; ++i) s += a[i];
    t = now() - t;
    sink += s;
    if (t < best_read) best_read = t;
    t = now();
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) b[i] = a[i];
    t = now() - t;
    if (t < best_copy) best_copy = t;
    t = now();
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) a[i] = b[i] + 0.5f * c[i];
    t = now() - t;
    if (t < best_triad) best_triad = t;
  }
  const double bytes = (double)n * sizeof(float);
  printf("{\"threads\": %d, \"mib_per_array\": %ld, \"read_gb_s\": %.2f, \"copy_gb_s\": %.2f, \"triad_gb_s\": %.2f, \"check\": %g}\n",
         omp_get_max_threads(), mib, bytes / best_read / 1e9, 2 * bytes / best_copy / 1e9, 3 * bytes / best_triad / 1e9,
         sink);
  free(a), free(b), free(c);
  return 0;
}
