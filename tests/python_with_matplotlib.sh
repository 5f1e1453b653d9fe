# Sourced by the plot tests: sets `python` to the first python3 with matplotlib (a
# pyenv or venv python3 may shadow Debian's), or skips the test (exit 0) without one.
python=""
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import matplotlib' 2>/dev/null; then
    python=$candidate
    break
  fi
done
if [ -z "$python" ]; then
  echo "skipped: no matplotlib"
  exit 0
fi
