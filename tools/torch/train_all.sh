#!/usr/bin/env bash
# Trains everything habitat reports and ships, from the tables of `habitat mlp dataset`:
#   1. one model per operation (habitat recipe), random 20% of configurations held out  -> models/
#   2. leave-one-GPU-out for linear and bmm: habitat recipe, its feature ablation, and the paper recipe
#   3. the paper's layer/width study (Figure 5) on conv2d
# usage: tools/torch/train_all.sh TABLE_DIR OUT_DIR [parallel jobs]
set -euo pipefail
tables=$1 out=$2 jobs=${3:-8}
bin=${HABITAT_TRAIN:-$(dirname "$0")/../../build-torch/habitat-train}
mkdir -p "$out/models" "$out/reports" "$out/logs"
habitat=(--layers 4 --width 256 --epochs 60 --drop-epoch 40 --batch 1024 --lr 1e-3)
small=(--layers 3 --width 128 --epochs 40 --drop-epoch 30 --batch 1024 --lr 1e-3)
paper=(--features paper --target direct --layers 8 --width 1024 --epochs 80 --drop-epoch 40 --batch 512 --lr 5e-4)
{
  # linear and bmm ship with the paper's features: they generalize best to unseen GPUs (the ablation below).
  for op in linear bmm; do
    echo "ship-$op|--table $tables/$op.table ${habitat[*]} --features paper --out $out/models/$op.safetensors"
    echo "allfeat-$op|--table $tables/$op.table ${habitat[*]}"
  done
  for op in conv2d conv_transpose2d batch_norm layer_norm lstm sdpa; do
    echo "ship-$op|--table $tables/$op.table ${habitat[*]} --out $out/models/$op.safetensors"
  done
  # Public-data-only ops (NeuSight's 5 GPUs): small networks, paper features, with their own leave-one-out.
  for op in softmax elementwise; do
    echo "ship-$op|--table $tables/$op.table ${small[*]} --features paper --out $out/models/$op.safetensors"
    echo "allfeat-$op|--table $tables/$op.table ${small[*]}"
    for gpu in "P4" "P100" "T4" "V100 PCIe 32GB" "A100 PCIe 40GB"; do
      echo "logo-paperfeat-$op-${gpu// /_}|--table $tables/$op.table ${small[*]} --features paper --holdout-gpu $gpu"
      echo "logo-habitat-$op-${gpu// /_}|--table $tables/$op.table ${small[*]} --holdout-gpu $gpu"
    done
  done
  for op in linear bmm; do
    for gpu in "P4" "P100" "T4" "V100 PCIe 32GB" "A100 PCIe 40GB" "H100 SXM" "H200"; do
      g=${gpu// /_}
      echo "logo-habitat-$op-$g|--table $tables/$op.table ${habitat[*]} --holdout-gpu $gpu"
      echo "logo-paperfeat-$op-$g|--table $tables/$op.table ${habitat[*]} --features paper --holdout-gpu $gpu"
      echo "logo-physics-$op-$g|--table $tables/$op.table ${habitat[*]} --features physics --holdout-gpu $gpu"
      echo "logo-direct-$op-$g|--table $tables/$op.table ${habitat[*]} --target direct --holdout-gpu $gpu"
      echo "logo-paper-$op-$g|--table $tables/$op.table ${paper[*]} --holdout-gpu $gpu"
    done
  done
  echo "paper-recipe-conv2d|--table $tables/conv2d.table ${paper[*]}"
  for layers in 2 4 8; do
    for width in 128 512 1024; do
      echo "size-conv2d-${layers}x${width}|--table $tables/conv2d.table --layers $layers --width $width --epochs 60 --drop-epoch 40 --batch 1024 --lr 1e-3"
    done
  done
} > "$out/jobs.txt"
total=$(wc -l < "$out/jobs.txt")
echo "train_all: $total jobs, $jobs at a time"
run_one() {
  local label=${1%%|*} args=${1#*|}
  # GPU names contain spaces: the holdout name is the rest of the line after --holdout-gpu.
  local holdout=""
  if [[ $args == *"--holdout-gpu "* ]]; then holdout=${args#*--holdout-gpu }; args=${args%% --holdout-gpu *}; fi
  # shellcheck disable=SC2086
  if "$bin" $args ${holdout:+--holdout-gpu "$holdout"} --label "$label" --report "$out/reports/$label.tsv" \
      > "$out/logs/$label.log" 2>&1; then echo "done $label"; else echo "FAILED $label"; tail -3 "$out/logs/$label.log"; fi
}
export -f run_one
export bin out
tr '\n' '\0' < "$out/jobs.txt" | xargs -0 -P "$jobs" -I{} bash -c 'run_one "$@"' _ {}
head -1 "$(ls "$out"/reports/*.tsv | head -1)" > "$out/report.tsv"
for f in "$out"/reports/*.tsv; do tail -n +2 "$f"; done >> "$out/report.tsv"
echo "train_all: $(grep -c . "$out/report.tsv") report rows in $out/report.tsv"
