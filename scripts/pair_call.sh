set -o pipefail; L=$OUT; . scripts/build_env.sh
t0=$(date +%s); rtopk_build $L/build.log; echo "build rc=$? $(( $(date +%s)-t0 ))s"
grep -A2 "pair_rows_kernel" $L/build.log | grep -E "registers|spill" | sort | uniq -c | head -20
timeout 150 python3 -m pytest tests/test_pair_rows.py -q -x -rfE > $L/tests.log 2>&1; echo "tests rc=$?"; tail -1 $L/tests.log; grep -E "^E " $L/tests.log | head -10
cd benchmarks
for dt in ${DTS:-bfloat16}; do
timeout ${BT:-250} python3 pair_modes.py --rounds ${ROUNDS:-2} --dtype $dt --cells "${CELLS:-262144x256:16,64,128;1048576x256:16;262144x512:16,64,128;262144x768:16,64,128;16384x256:16;65536x512:32}" 2>&1 | tee $L/pair_$dt.md
done
