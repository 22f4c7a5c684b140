# Sourced by the scripts that run the Python harness (benchmarks/run.sh,
# dev-support/soak.sh): sets python to a python3 that has matplotlib (a
# pyenv or venv python3 first on PATH may not see Debian's
# python3-matplotlib), else to python3, whose results come without plots.
python=""
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import matplotlib' >/dev/null 2>&1; then
    python="$candidate"
    break
  fi
done
if [ -z "$python" ]; then
  echo "$(basename "$0"): no python3 with matplotlib: results without" \
    "plots (apt-get install python3-matplotlib)" >&2
  python=python3
fi
