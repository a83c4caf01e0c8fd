#!/usr/bin/env bash
# One device call: GPU tests, golden traces, engine benchmarks, ncu comparison. Logs go to $OUT.
#   bash tests/benchmarks/device_run.sh [steps...]   steps: info testsparallel tensor tunemma tensorrecord wgmma wgmmarecord ncuwgmma ncutensor tests testsgpu testsrest ladder golden bench ncu ncuvec benchgpu record tune cublas pages cli all-tests
# The whole GPU suite ("tests") takes about 575 s on an H100, near a device call's 600: "testsgpu"
# (tests/test_gpu.py, about 520 s) and "testsrest" (the other GPU tests) run it in two calls, or
# "testsparallel" in one: tests/test_gpu.py in 4 pytest processes at once (its time is nvcc filling
# the compile cache, one build at a time in one process: 296 s on an H200, 307 on an H100), then the rest.
set -uo pipefail
source .gpu/activate.sh || exit 1
# The GPU machine has no bubblewrap and the staged wheels lack streamlit-code-editor, so the Playground's
# GPU tests skip or fail there. Carried in .bwrap/ (git-ignored): bin/bwrap with the libraries it links
# (lib/), and py/ with code_editor (its frontend's .js left out: AppTest draws nothing), they run.
[ -d .bwrap ] && export PATH=$PWD/.bwrap/bin:$PATH LD_LIBRARY_PATH=$PWD/.bwrap/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
  PYTHONPATH=$PYTHONPATH:$PWD/.bwrap/py
export PYTHONUNBUFFERED=1 MATMUL_EXPLORER_CACHE=/tmp/mmx-cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
steps=${*:-info tests golden bench ncu}
for step in $steps; do
  echo "=== $step"
  case $step in
    info) nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
          python3 -m engine info ;;
    tests) python3 -m pytest -q -m gpu tests -p no:cacheprovider 2>&1 | tee "$OUT/gpu-tests.log" | tail -25 ;;
    testsgpu) python3 -m pytest -q -m gpu tests/test_gpu.py -p no:cacheprovider 2>&1 | tee "$OUT/gpu-tests-a.log" | tail -25 ;;
    testsparallel)
      python3 -m pytest -q -m gpu tests/test_gpu.py --collect-only -p no:cacheprovider 2>/dev/null | grep '::' > "$OUT/gpu-ids"
      split -n r/4 "$OUT/gpu-ids" "$OUT/gpu-shard."
      for shard in "$OUT"/gpu-shard.a?; do
        (xargs -d '\n' -a "$shard" python3 -m pytest -q -m gpu -p no:cacheprovider > "$shard.log" 2>&1; echo "rc=$?" >> "$shard.log") &
      done
      wait
      for shard in "$OUT"/gpu-shard.a?; do tail -2 "$shard.log"; rm -f "$shard"; done
      grep -h -E "^(FAILED|ERROR)" "$OUT"/gpu-shard.a?.log | head -20
      python3 -m pytest -q -m gpu tests --ignore=tests/test_gpu.py -p no:cacheprovider 2>&1 | tee "$OUT/gpu-tests-b.log" | tail -5 ;;
    testsrest) python3 -m pytest -q -m gpu tests --ignore=tests/test_gpu.py -p no:cacheprovider 2>&1 | tee "$OUT/gpu-tests-b.log" | tail -25 ;;
    ladder) python3 -m pytest -q -m gpu tests/test_gpu.py -k "ladder or every_kernel" -p no:cacheprovider 2>&1 | tee "$OUT/gpu-ladder.log" | tail -15 ;;
    tune) python3 tests/benchmarks/tune_ladder.py "$OUT/tuning.json" ${TUNE_ARGS:-} 2>&1 | tee "$OUT/tune.log" ;;
    tunemma) python3 tests/benchmarks/tune_ladder.py "$OUT/tuning-mma.json" --kernels mma_pipelined --reference cublas_gemm_fp16 --top 8 2>&1 | tee "$OUT/tune-mma.log" ;;
    tensorrecord) python3 tests/benchmarks/tensor_record.py "$OUT/tensor-record.json" --tuning "$OUT/tuning-mma.json" 2>&1 | tee "$OUT/tensor-record.log" ;;
    wgmma) python3 tests/benchmarks/wgmma_beyond.py "$OUT" ${WGMMA_ARGS:-} 2>&1 | tee "$OUT/wgmma.log" ;;
    wgmmarecord) python3 tests/benchmarks/tensor_record.py "$OUT/tensor-record.json" 2>&1 | tee "$OUT/tensor-record.log" ;;
    ncuwgmma) timeout 300 python3 tests/benchmarks/ncu_wgmma.py 2>&1 | tee "$OUT/ncu-wgmma.log" ;;
    tensor) python3 tests/benchmarks/tensor_device.py "$OUT/tensor" 2>&1 | tee "$OUT/tensor.log" ;;
    ncutensor) timeout 300 python3 tests/benchmarks/ncu_tensor.py "$OUT/ncu-tensor.json" 2>&1 | tail -20 ;;
    cublas) python3 tests/benchmarks/cublas_repro.py 2>&1 | tee "$OUT/cublas-repro.log" ;;
    golden) python3 tests/golden/record_golden.py "$OUT/golden_traces.npz" 2>&1 | tee "$OUT/golden.log" ;;
    bench) python3 tests/benchmarks/bench_engine.py 2>&1 | tee "$OUT/bench-engine.log" ;;
    ncu) timeout 420 python3 tests/benchmarks/ncu_compare.py "$OUT/ncu-compare.md" 2>&1 | tail -60 ;;
    ncuvec) timeout 480 python3 tests/benchmarks/ncu_vector.py 2>&1 | tee "$OUT/ncu-vector.md" | tail -30 ;;
    benchgpu) python3 tests/benchmarks/bench_gpu.py 2>&1 | tee "$OUT/bench-gpu.log" ;;
    record) python3 -m engine bench --kernels naive_x_rows,naive_x_cols,naive_transposed_b,tiled_guarded,tiled_unguarded,shared_bank_conflicts,blocktile_1d,blocktile_2d,vectorized,warptile,double_buffered,prefetched,split_k,split_k_padded,cublas_sgemm,cublas_sgemm_tf32 \
              --sizes 256,512,1024,2048,4096,8192,1000,3000,4095,4097,8191,4096x1024x2048,2000x3000x700,4096x4096x128 --formats json --out "$OUT/recorded" 2>&1 | tee "$OUT/record.log" | tail -40 ;;
    pages) python3 -m pytest -q tests/test_pages.py tests/test_benchmarks_page.py -p no:cacheprovider 2>&1 | tail -15 ;;
    cli) for k in naive_x_rows naive_x_cols naive_transposed_b tiled_guarded tiled_unguarded shared_bank_conflicts; do
           case $k in tiled*|shared*) tile="--tile 16" ;; *) tile="" ;; esac   # only kernels that take TILE
           python3 -m engine trace $k --m 64 --n 48 --k 32 $tile --source gpu --out "/tmp/$k.npz" | python3 -c \
             "import json,sys; s=json.load(sys.stdin); print(f\"{s['kernel']:24} {s['source']} {s['device']} records {s['records']:,} rel_error {s['relative_error']:.1e}\")"
         done ;;
    all-tests) python3 -m pytest -q tests -p no:cacheprovider 2>&1 | tee "$OUT/all-tests.log" | tail -15 ;;
    *) echo "unknown step $step" ;;
  esac
done
