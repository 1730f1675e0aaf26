set -u
OUT0=$OUT; mkdir -p $OUT/logs
SKIP_TESTS=1 BENCH_GRIDS=adversarial OUT=$OUT/logs bash scripts/gpu_check.sh > $OUT/logs/check.txt 2>&1
timeout 150 python3 -m pytest tests/test_slow_rows.py -q -rP > $OUT/logs/slow_rows.log 2>&1
tar czf $OUT/a.tgz -C $OUT logs
for dt in float16 bfloat16; do timeout 200 python3 -m rtopk.bench --grid paper --dtype $dt --json $OUT/logs/bench_paper_$dt.json 2>/dev/null > $OUT/logs/bench_paper_$dt.md; done
tar czf $OUT/b.tgz -C $OUT logs; rm -rf $OUT/logs
