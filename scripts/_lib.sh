# Shared by scripts/demo.sh and scripts/test.sh (sourced, from the repository root).

# find_python X.Y: print a working interpreter for Python X.Y, or fail naming where it looked.
# $LANCE_DUCK_PYTHON_X_Y (e.g. LANCE_DUCK_PYTHON_3_10=/opt/py/bin/python3.10) wins; then pythonX.Y on
# PATH (pyenv shims that are not activated do not count), then pyenv's versions, /usr/bin, /usr/local/bin.
find_python() {
  local want=$1 var="LANCE_DUCK_PYTHON_${1//./_}" c
  local candidates=("${!var:-}" "$(command -v "python$want" 2>/dev/null || true)")
  candidates+=("${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$want".*/bin/python"$want")
  candidates+=("/usr/local/bin/python$want" "/usr/bin/python$want")
  for c in "${candidates[@]}"; do
    if [ -n "$c" ] && [ -x "$c" ] &&
       "$c" -c "import sys, venv; sys.exit(sys.version_info[:2] != tuple(map(int, '$want'.split('.'))))" 2>/dev/null; then
      echo "$c"
      return 0
    fi
  done
  echo "error: Python $want is needed (the full run also tests the oldest and the newest supported Python) but" \
       "no working python$want with the venv module was found on PATH, in ${PYENV_ROOT:-$HOME/.pyenv}/versions," \
       "/usr/local/bin or /usr/bin. Either run the suite on this Python only: 'bash scripts/test.sh tests';" \
       "or install Python $want: with uv ('pip install uv && uv python install $want', then" \
       "LANCE_DUCK_PYTHON_${want//./_}=\$(uv python find $want)), with pyenv ('pyenv install $want'), or where" \
       "your distribution packages it ('apt-get install python$want python$want-venv'; Debian 12 has none:" \
       "use uv or pyenv); or point LANCE_DUCK_PYTHON_${want//./_} at an interpreter." >&2
  return 1
}

# ensure_venv DIR PYTHON PIP_TARGET: create DIR with PYTHON if needed and `pip install -e PIP_TARGET`,
# skipped when an earlier run installed the same target from the same pyproject.toml (a stamp file).
ensure_venv() {
  local dir=$1 py=$2 target=$3
  if [ ! -x "$dir/bin/python" ]; then
    "$py" -m venv "$dir"
  fi
  local stamp="$dir/.lance-duck-installed"
  local want
  want="$target $("$dir/bin/python" -c 'import hashlib, sys; print(hashlib.sha256(open("pyproject.toml", "rb").read()).hexdigest())')"
  if [ -f "$stamp" ] && grep -qxF "$want" "$stamp"; then
    return 0
  fi
  "$dir/bin/python" -m pip install -q --upgrade pip >/dev/null
  "$dir/bin/python" -m pip install -q -e "$target"
  echo "$want" >> "$stamp"
}

# check_java: the Spark tests start a local Spark session, which needs Java 17 or newer on PATH.
check_java() {
  local fix="Install a JDK or JRE 17+ (Debian/Ubuntu: 'apt-get install -y openjdk-17-jre-headless'; macOS: 'brew install"
  fix="$fix openjdk@17') and put its bin/ on PATH (or set JAVA_HOME and PATH=\$JAVA_HOME/bin:\$PATH)."
  if ! command -v java >/dev/null 2>&1; then
    echo "error: 'java' is not on PATH. The Spark tests (tests/spark) start a local Spark session, which needs" \
         "Java 17 or newer. $fix" >&2
    return 1
  fi
  local line major
  line=$(java -version 2>&1 | head -n 1)
  major=$(echo "$line" | sed -E 's/.*version "([0-9]+)(\.([0-9]+))?.*/\1 \3/')
  set -- $major
  if [ "${1:-0}" = "1" ]; then major=${2:-0}; else major=${1:-0}; fi
  if ! [ "$major" -ge 17 ] 2>/dev/null; then
    echo "error: the Spark tests need Java 17 or newer; 'java' on PATH is: $line. $fix" >&2
    return 1
  fi
}
