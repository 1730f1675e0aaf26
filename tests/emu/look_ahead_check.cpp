// The look-ahead protocol of csrc/rtopk_algo.h, on the CPU: a Row that announces the next steps'
// thresholds (value_thresholds_ahead / key_thresholds_ahead, the functions the CUDA block kernel
// calls) and records every count the searches then ask for.  For rows of many kinds, every k and
// every mode it checks that the plan equals the one of a Row without look-ahead, that the counts
// asked for are among the announced ones, except those the protocol names (exact_plan's last count
// at t + 1, Algorithm 1's at an unmoved hi), and that one batch serves kAheadDepth steps (a wrong
// tree is still correct, the row counting again, but slow).  Prints one line of totals; exits 1 on
// the first failure.  Used by tests/test_look_ahead.py.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "rtopk_algo.h"

using namespace rtopk;

template <typename Compute>
struct PlainRow {
  using Key = typename KeyTraits<Compute>::Key;
  const std::vector<Key>* keys;
  int64_t passes = 0;  // count passes over the row

  int64_t count_ge(Key t) {
    ++passes;
    int64_t c = 0;
    for (Key k : *keys) c += k >= t;
    return c;
  }
  bool key_range(Key& lo, Key& hi, bool finite_only) const {
    lo = KeyTraits<Compute>::kMax;
    hi = 0;
    bool any = false;
    for (Key k : *keys) {
      if (!finite_only || key_is_finite(k)) {
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
        any = true;
      }
    }
    return any;
  }
};

template <typename Compute>
struct AheadRow : PlainRow<Compute> {
  using Key = typename KeyTraits<Compute>::Key;
  static constexpr bool kLooksAhead = true;
  Key table[kAheadKeys];
  int n = 0;
  int64_t hits = 0, misses = 0, batches = 0;
  int64_t early = 0;  // batches announced before the last one's kAheadDepth steps had run
  int kind = 0, since = 0;
  bool own = false;  // the table is this search's (not the last one's, whose keys may match)

  // One step of a search (1: values, 2: key bits); a new batch only when its threshold is unknown,
  // which a right tree makes happen every kAheadDepth steps of one search.
  template <typename Announce>
  void step(int search, bool known, Announce announce) {
    if (search != kind) {  // a search's first step
      kind = search;
      own = false;
    }
    ++since;
    if (known) return;
    if (own && since != kAheadDepth) ++early;
    announce();
    ++batches;
    since = 0;
    own = true;
  }

  bool has(Key t) const {
    for (int j = 0; j < n; ++j)
      if (table[j] == t) return true;
    return false;
  }
  void look_ahead_values(Compute lo, Compute hi, int64_t steps) {
    step(1, has(to_key<Compute>(KeyTraits<Compute>::midpoint(lo, hi))),
         [&] { n = value_thresholds_ahead<Compute>(lo, hi, steps, table); });
  }
  void look_ahead_keys(Key t, int b) {
    step(2, has(Key(t | (Key(1) << b))), [&] { n = key_thresholds_ahead<Key>(t, b, table); });
  }
  int64_t count_ge(Key t) {
    if (has(t)) {
      ++hits;
    } else {
      ++misses;
    }
    return PlainRow<Compute>::count_ge(t);
  }
};

// Rows of several kinds (values in Compute, then keys in both directions).
template <typename Compute>
std::vector<Compute> make_row(int kind, int m, std::mt19937_64& rng) {
  std::normal_distribution<double> nd;
  std::uniform_real_distribution<double> ud;
  std::vector<Compute> v(m);
  const double inf = std::numeric_limits<double>::infinity();
  for (int i = 0; i < m; ++i) {
    const double g = nd(rng), u = ud(rng);
    double x = g;
    switch (kind) {
      case 1:
        x = std::floor(u * 4);
        break;  // ties
      case 2:
        x = u < 0.1 ? inf : u > 0.9 ? -inf : g;
        break;  // +-inf
      case 3:
        x = u < 0.15 ? std::nan("") : g;
        break;  // NaN
      case 4:
        x = g * g * g * g * g;
        break;  // heavy tail
      case 5:
        x = 1.0 + std::floor(u * 8) * std::ldexp(1.0, -23);
        break;  // few ulps
      case 6:
        x = std::ldexp(g, -140);
        break;  // denormal (fp32)
      case 7:
        x = 3.25;
        break;  // all equal
      case 8:
        x = i;
        break;  // ascending
      default:
        break;  // randn
    }
    v[i] = static_cast<Compute>(x);
  }
  return v;
}

template <typename Compute>
int run(const char* name, int64_t* totals) {
  using Key = typename KeyTraits<Compute>::Key;
  std::mt19937_64 rng(20261127);
  const int kMs[] = {1, 2, 5, 33, 100, 1000, 4099};
  const int64_t kIters[] = {1, 2, 3, 4, 5, 7, 8, 13, 40, -1};
  const double kEps[] = {0.0, 1e-4, 0.3};
  for (int m : kMs) {
    for (int kind = 0; kind <= 8; ++kind) {
      const std::vector<Compute> v = make_row<Compute>(kind, m, rng);
      for (int dir = 0; dir < 2; ++dir) {
        std::vector<Key> keys(m);
        for (int i = 0; i < m; ++i) keys[i] = directed_key<Compute>(v[i], dir == 0);
        const int64_t ks[] = {1, 2, m / 3 + 1, m / 2, m - 1 > 0 ? m - 1 : 1, m};
        for (int64_t k : ks) {
          if (k < 1 || k > m) continue;
          for (int64_t it : kIters) {
            for (double e : kEps) {
              if (it > 0 && e > 0 && it != 4) continue;
              PlainRow<Compute> plain{&keys};
              AheadRow<Compute> ahead;
              ahead.keys = &keys;
              const Plan<Key> a = make_plan<Compute>(plain, k, it, Compute(e));
              const Plan<Key> b = make_plan<Compute>(ahead, k, it, Compute(e));
              const bool same = a.above == b.above && a.floor == b.floor && a.quota == b.quota;
              // Algorithm 2 may miss nowhere; exact_plan once (t + 1), Algorithm 1 once more (hi)
              // plus exact_plan's when it falls back to it; a search that ends before its first
              // step (eps wider than the row's range) announces nothing: its counts at lo and hi.
              const int64_t allowed = (it > 0 ? 0 : (e > 0 ? 2 : 1)) + (ahead.batches == 0 ? 2 : 0);
              if (!same || ahead.misses > allowed || ahead.early > 0) {
                std::printf("FAIL %s m=%d kind=%d largest=%d k=%" PRId64 " max_iter=%" PRId64
                            " eps=%g: plan %s, %" PRId64 " counts outside the look-ahead, %" PRId64
                            " batches early\n",
                            name, m, kind, dir == 0, k, it, e, same ? "same" : "differs",
                            ahead.misses, ahead.early);
                return 1;
              }
              totals[0] += 1;
              totals[1] += plain.passes;
              totals[2] += ahead.batches + ahead.misses;
            }
          }
        }
      }
    }
  }
  return 0;
}

int main() {
  int64_t totals[3] = {0, 0, 0};  // plans, count passes without, with the look-ahead
  if (run<float>("fp32", totals) || run<double>("fp64", totals)) return 1;
  std::printf("OK plans=%" PRId64 " passes_plain=%" PRId64 " passes_ahead=%" PRId64 "\n", totals[0],
              totals[1], totals[2]);
  return 0;
}
