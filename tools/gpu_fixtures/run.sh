#!/bin/bash
cd "$(dirname "$0")"
exec > >(tee "$OUT/log.txt") 2>&1
set -x
nvidia-smi
nvcc --version | tail -2
which ncu nsys; ncu --version | tail -1
mkdir -p res
nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE > res/nvidia_smi_clocks.txt
nvcc -O2 -arch=sm_90 -DUSE_MAXNREG -Xptxas -v -o problems problems.cu 2> res/ptxas.txt || nvcc -O2 -arch=sm_90 -Xptxas -v -o problems problems.cu 2> res/ptxas.txt
cat res/ptxas.txt
./problems
timeout 150 ncu --set full -o res/problems_full ./problems > res/ncu_full_stdout.txt 2>&1; echo "ncu full rc $?"
ncu -i res/problems_full.ncu-rep --csv --page details > res/ncu_details_full.csv
ncu -i res/problems_full.ncu-rep > res/ncu_text_full.txt
ncu -i res/problems_full.ncu-rep --csv --page raw > res/ncu_raw_full.csv
timeout 60 ncu --clock-control none --section SpeedOfLight ./problems > res/ncu_text_sol_unlocked.txt 2>&1
timeout 60 ncu --clock-control base --section SpeedOfLight ./problems > res/ncu_text_sol_base.txt 2>&1
timeout 60 ncu --clock-control none --section SpeedOfLight --csv ./problems > res/ncu_csv_sol_unlocked.csv 2>&1
ls -la res
PYTHONUNBUFFERED=1 timeout 240 python3 scenarios.py res
nvidia-smi -q -d CLOCK,PERFORMANCE > res/nvidia_smi_clocks_after.txt
ls -la res
tar czf "$OUT/results.tar.gz" res
ls -la "$OUT"
