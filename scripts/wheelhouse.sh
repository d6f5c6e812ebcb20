#!/usr/bin/env bash
# On a connected machine: download into .whl/ the wheels that `scripts/setup.sh` installs offline, i.e. dsa_lab's
# own requirements and its `test` and `notebooks` extras, with everything they pull in, for the target's Python
# (default 3.12 on x86_64 Linux, glibc >= 2.28: the lent GPU image) -- all but torch, triton and nvidia-*/cuda-*,
# which the target keeps (setup.sh sees its torch).  Then carry .whl/ with the clone; setup.sh finds it.
#   scripts/wheelhouse.sh [--lab] [DIR]      (DIR default .whl; --lab adds JupyterLab, ~30 MB more)
# WHEELHOUSE_PY (3.12), WHEELHOUSE_PLATFORMS (manylinux tags) pick the target; WHEELHOUSE_SKIP="numpy ..." leaves out
# packages the target already has (each saves its wheel's size; setup.sh then fails if one is missing there).
set -euo pipefail
cd "$(dirname "$0")/.."
lab=0
if [ "${1:-}" = "--lab" ]; then lab=1; shift; fi
out=${1:-.whl}
pyver=${WHEELHOUSE_PY:-3.12}
glibc_2_28="manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64"
platforms=${WHEELHOUSE_PLATFORMS:-$glibc_2_28}
PY=${PYTHON:-python3}

# The requirement lines, read from pyproject.toml (the one dependency list), less torch and triton.
reqs=$("$PY" - "$lab" <<'EOF'
import re, sys
try:
    import tomllib
except ImportError:  # Python < 3.11: pip's copy
    from pip._vendor import tomli as tomllib
p = tomllib.load(open("pyproject.toml", "rb"))["project"]
extras = p["optional-dependencies"]
reqs = p["dependencies"] + extras["test"] + extras["notebooks"] + (extras["lab"] if sys.argv[1] == "1" else [])
reqs.append("setuptools>=68")  # the build backend, for pip's isolated build of the editable install
keep = [r for r in reqs if re.split(r"[ <>=!~;\[]", r, maxsplit=1)[0].lower() not in ("torch", "triton")]
print("\n".join(keep))
EOF
)
mkdir -p "$out"
rm -f "$out"/*.whl
plat_args=()
for p in $platforms; do plat_args+=(--platform "$p"); done
abi="cp${pyver/./}"
echo "wheelhouse.sh: downloading for CPython $pyver ($platforms) into $out/" >&2
# shellcheck disable=SC2086
"$PY" -m pip download -q --dest "$out" --only-binary=:all: --python-version "$pyver" --implementation cp \
  --abi "$abi" --abi abi3 --abi none "${plat_args[@]}" $reqs
for name in ${WHEELHOUSE_SKIP:-}; do
  rm -f "$out/${name//-/_}"-[0-9]*.whl "$out/$name"-[0-9]*.whl
done
bad=$(ls "$out" | grep -iE '^(torch|triton|nvidia|cuda)[-_]' || true)
if [ -n "$bad" ]; then
  echo "wheelhouse.sh: unexpected wheels (the target keeps its own): $bad" >&2
  exit 1
fi
echo "wheelhouse.sh: $(ls "$out"/*.whl | wc -l) wheels, $(du -sh "$out" | cut -f1) in $out/" >&2
