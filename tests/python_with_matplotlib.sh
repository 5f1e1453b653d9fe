# Sourced by the plot tests: sets `python` to the first python3 with matplotlib (a
# pyenv or venv python3 may shadow Debian's), or skips the test without one: exit 77,
# which tests/CMakeLists.txt gives ctest as the test's SKIP_RETURN_CODE (issue 46: a
# skipped plot test showed as passed).
python=""
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import matplotlib' 2>/dev/null; then
    python=$candidate
    break
  fi
done
if [ -z "$python" ]; then
  echo "skipped: no python3 with matplotlib"
  exit 77
fi
