#!/bin/bash
# compute-sanitizer memcheck over the GPU tests (pytest -m gpu) and over the numba client's launch
# loop (issue 26, point 6), spread over the machine's GPUs: the test files are dealt out by size,
# largest first, to one queue per GPU; each file runs in its own pytest under the sanitizer, with
# --target-processes all (the tests' subprocesses are checked too) and one log per process.
# API errors are not counted (--report-api-errors no): the tests provoke them on purpose, to check
# the Python errors ours raises. Leaks (--leak-check full) are listed apart: an object a test
# leaves open at exit is not an error. Stops starting files at DEADLINE_S (default 540 s).
# QUEUES (default 1) queues share each GPU, for a machine whose cores outnumber its GPUs. A file
# named FILE@N runs as N processes, its GPU tests dealt out to them. NUMBA_LOOP=0 skips the launch
# loop.
# On the GPU machine: LOG_DIR=$OUT bash .gpu/on-gpu.sh bash tools/gpu/memcheck.sh [test files]
# Every log goes into $LOG_DIR/memcheck.tgz; the summary is printed.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${LOG_DIR:-/tmp/memcheck}
L=$(mktemp -d)
end=$(( $(date +%s) + ${DEADLINE_S:-540} ))
gpus=$(nvidia-smi -L | wc -l)
tree=$(mktemp -d)
(cd "$root" && tar --exclude=./cuda_core --exclude=./.gpu --exclude=./.git --exclude=./build -cf - .) \
  | tar -xf - -C "$tree"
# test_launcher's million launches, as 20,000 (the test says why).
# CUDA_CORE_UNDER_SANITIZER: the tests leave out what the sanitizer changes (host memory it
# grows, kernels it serializes) and give their child processes 5 times the time
# (tests/helpers SLOWDOWN).
export PYTHONSAFEPATH=1 PYTHONUNBUFFERED=1 CUDA_CORE_FLAT_LAUNCHES=20000 CUDA_CORE_UNDER_SANITIZER=1
cd "$tree" || exit 1
files=${*:-$(ls tests/test_*.py)}
sanitize() {  # sanitize GPU NAME COMMAND...: one run under memcheck, logs named after NAME
  local g=$1 name=$2; shift 2
  local s=$(( end - $(date +%s) )); [ "$s" -gt 20 ] || { echo "$name: not started (deadline)"; return; }
  CUDA_VISIBLE_DEVICES=$g timeout -k 20 "$s" compute-sanitizer --tool memcheck --leak-check full \
    --print-limit 0 --report-api-errors no --target-processes all --log-file "$L/$name.%p.log" "$@" \
    > "$L/$name.out" 2>&1
  echo "$name: exit $? after $(( $(date +%s) - t0 )) s; $(tail -1 "$L/$name.out")"
}
# The runs: a file, or one of the N parts of FILE@N (its GPU tests' ids, dealt out in turn); each
# weighs its share of the file's bytes and has an argument file of what pytest runs.
declare -a names weights
for entry in $files; do
  f=${entry%@*}; n=1; [ "$entry" != "$f" ] && n=${entry#*@}
  base=$(basename "$f" .py)
  if [ "$n" -gt 1 ]; then
    python3 -m pytest -p no:cacheprovider -q --collect-only -m gpu "$f" | grep '::' > "$L/$base.ids"
    split -n "r/$n" -d -a 1 "$L/$base.ids" "$L/$base.ids."
    for k in $(seq 0 $((n - 1))); do
      names+=("$base.$k"); weights+=($(( $(wc -c < "$f") / n ))); cp "$L/$base.ids.$k" "$L/$base.$k.args"
    done
  else
    names+=("$base"); weights+=("$(wc -c < "$f")"); echo "$f" > "$L/$base.args"
  fi
done
# Deal the runs to the queues (QUEUES per GPU; queue q on GPU q modulo the count), heaviest first,
# each to the queue with the fewest bytes so far.
nq=$(( gpus * ${QUEUES:-1} ))
declare -a queue bytes
for q in $(seq 0 $((nq - 1))); do queue[q]=""; bytes[q]=0; done
numba_loop=$([ "${NUMBA_LOOP:-1}" != 0 ] && [ -d "$root/.gpu/numba" ] && echo 1 || echo 0)
[ "$numba_loop" = 1 ] && bytes[0]=60000  # queue 0 starts with the numba launch loop
for i in $(for i in "${!names[@]}"; do echo "${weights[i]} $i"; done | sort -rn | awk '{print $2}'); do
  best=0
  for q in $(seq 1 $((nq - 1))); do [ "${bytes[q]}" -lt "${bytes[best]}" ] && best=$q; done
  queue[best]+=" ${names[i]}"; bytes[best]=$(( bytes[best] + weights[i] ))
done
t0=$(date +%s)
for q in $(seq 0 $((nq - 1))); do
  g=$(( q % gpus ))
  (if [ "$q" = 0 ] && [ "$numba_loop" = 1 ]; then
     H=$root/.gpu/numba
     rm -rf /tmp/mc_site
     python3 -m pip install -q --no-index --no-deps --target /tmp/mc_site "$root"/.gpu/*.whl \
       $(ls "$root"/.gpu/numba_extra/*.whl 2>/dev/null) && mkdir -p /tmp/mc_hook &&
     echo "import site; site.addsitedir('/tmp/mc_site')" > /tmp/mc_hook/sitecustomize.py &&
     PYTHONPATH=/tmp/mc_hook:/tmp/mc_site:$H PEER=ours CUDA_CORE_COMPAT=1 \
       sanitize 0 numba_launch_loop python3 "$H/launch_loop.py" ||
       echo "numba_launch_loop: could not be set up"
   fi
   for name in ${queue[q]}; do
     mapfile -t args < "$L/$name.args"
     sanitize "$g" "$name" python3 -m pytest -p no:cacheprovider -q -m gpu "${args[@]}"
   done) > "$L/queue$q.txt" 2>&1 &
done
wait
cat "$L"/queue*.txt
{
# Each process log ends in "ERROR SUMMARY: N errors" (every record printed: --print-limit 0); its
# records start with an unindented line after the prefix. Leaks are records that start "Leaked".
# A process killed at the deadline has no summary: it is named apart.
# The summary's count includes the leak records, so errors other than leaks are counted per log,
# in the logs that have a summary.
awk '/^========= ERROR SUMMARY: [0-9]+ errors?$/ {n++; errs[FILENAME] = $4}
     /^========= Leaked / {k++; leaks[FILENAME]++; n3 = $3; gsub(",", "", n3); b += n3}
     /^========= [A-Z]/ && !/^========= (ERROR|LEAK) SUMMARY|^========= (Leaked|COMPUTE-SANITIZER|Target application)/ {
       r++; print FILENAME ": " substr($0, 11) > "/dev/stderr"}
     END {for (f in errs) e += errs[f] - leaks[f]
          printf "MEMCHECK: %d processes, %d errors other than leaks (%d records), %d leak records (%d bytes)\n",
          n, e, r, k, b}' "$L"/*.log
echo "logs without a summary (process killed):"
killed=$(grep -L '^========= ERROR SUMMARY: [0-9]* error' "$L"/*.log)
echo "${killed:-  none}"
echo "leaks by process log:"; grep -c '^========= Leaked ' "$L"/*.log | grep -v ':0$' || echo "  none"
} 2>&1 | tee "$L/summary.txt"
mkdir -p "$out" && tar -czf "$out/memcheck.tgz" -C "$L" .
