#!/usr/bin/env bash
# Create .venv (once) and install dsa_lab with its extras from pyproject.toml (the one dependency list).
#
# Which torch (DSA_LAB_TORCH_EXTRA):
#   unset     the choice an existing .venv was made with; for a new .venv: a GPU (CUDA or ROCm) that $PYTHON's torch
#             already sees: keep that torch and its triton (the venv sees $PYTHON's packages); otherwise the `cpu`
#             extra, which pins the CPU build of torch
#   cpu       the CPU build, GPU or not
#   (empty)   keep $PYTHON's torch, GPU or not (DSA_LAB_TORCH_EXTRA= scripts/setup.sh)
# A value that differs from the existing .venv's choice makes .venv anew.
# Offline: when .whl/ holds wheels (scripts/wheelhouse.sh, built on a connected machine), pip installs from it alone
# (--no-index), the `test` and `notebooks` extras; DSA_LAB_WHEELHOUSE names another folder.
# Chromium (static figure export, the browser check): as root with apt-get and no chromium on PATH, Debian's package
# is installed, and this says so first; DSA_LAB_NO_CHROMIUM=1 skips it (so does an offline install).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
say() { echo "setup.sh: $*" >&2; }

choice=.venv/.dsa_lab_torch   # the torch extra .venv was made with ("" = keep $PY's torch)
if [ -x .venv/bin/python ] && [ ! -f "$choice" ]; then   # a .venv from before the choice was recorded
  if grep -qi "^include-system-site-packages *= *true" .venv/pyvenv.cfg; then echo > "$choice"
  else echo cpu > "$choice"; fi
fi
if [ -n "${DSA_LAB_TORCH_EXTRA+set}" ]; then
  torch_extra=$DSA_LAB_TORCH_EXTRA
  if [ -f "$choice" ] && [ "$(cat "$choice")" != "$torch_extra" ]; then
    say "DSA_LAB_TORCH_EXTRA='$torch_extra' is not the choice .venv was made with ('$(cat "$choice")'): making it anew"
    rm -rf .venv
  fi
elif [ -f "$choice" ]; then
  torch_extra=$(cat "$choice")   # an existing .venv keeps its choice; set DSA_LAB_TORCH_EXTRA to change it
elif timeout 120 "$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" >/dev/null 2>&1; then
  torch_extra=""   # torch.cuda covers ROCm builds too (HIP)
  say "a GPU is visible to $("$PY" -c 'import torch; print("torch", torch.__version__)') in $PY: keeping it"
else
  torch_extra=cpu
fi
keep=$([ -z "$torch_extra" ] && echo 1 || echo 0)   # the venv sees $PY's packages (its torch, triton)

wheels=${DSA_LAB_WHEELHOUSE:-.whl}
offline=0
if compgen -G "$wheels/*.whl" >/dev/null; then
  offline=1
fi

if [ ! -x .venv/bin/python ]; then
  if [ "$keep" = 1 ]; then
    # Without pip of its own when the interpreter has no ensurepip: the .pth below brings $PY's pip.
    "$PY" -m venv --system-site-packages .venv 2>/dev/null \
      || "$PY" -m venv --clear --system-site-packages --without-pip .venv
    # $PY may itself be a venv (the lent GPU image's python3 is one): --system-site-packages then shows the base
    # interpreter's packages, not $PY's.  This .pth puts $PY's site-packages after the venv's own.
    site=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    "$PY" -c "import site; print('\n'.join(site.getsitepackages()))" > "$site/_dsa_lab_keep_torch.pth"
  else
    "$PY" -m venv .venv
  fi
  echo "$torch_extra" > "$choice"
fi

extras="test,notebooks"
if [ "$offline" = 0 ]; then
  extras="lab,lint,$extras"
  [ -z "$torch_extra" ] || extras="$torch_extra,$extras"
else  # the wheelhouse holds no torch (nor, unless built with --lab, JupyterLab)
  if compgen -G "$wheels/jupyterlab-*.whl" >/dev/null; then extras="lab,$extras"; fi
  if compgen -G "$wheels/ruff-*.whl" >/dev/null; then extras="lint,$extras"; fi
  [ "$keep" = 1 ] || say "offline, keeping no torch: torch must come from $wheels/ (DSA_LAB_TORCH_EXTRA= keeps $PY's)"
fi
stamp=".venv/.dsa_lab_installed"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  if [ "$offline" = 1 ]; then
    say "installing .[$extras] from $wheels/ only (offline)"
    .venv/bin/python -m pip install -q --no-index --find-links "$wheels" -e ".[${extras}]"
  else
    .venv/bin/python -m pip install -q --upgrade pip >/dev/null
    .venv/bin/python -m pip install -q -e ".[${extras}]"
  fi
  touch "$stamp"
fi

# Static figures and the browser check need a Chromium on PATH (Debian's package works offline once installed).
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  if [ "${DSA_LAB_NO_CHROMIUM:-0}" = 1 ]; then
    say "DSA_LAB_NO_CHROMIUM=1: not installing chromium (static figure export and the browser check are skipped)"
  elif [ "$offline" = 1 ]; then
    say "offline install: not installing chromium (static figure export and the browser check are skipped)"
  else
    say "running as root: apt-get install chromium (Debian's package and its dependencies, for static figure" \
        "export and the browser check; DSA_LAB_NO_CHROMIUM=1 skips it)"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || say "could not install chromium; static figure export and the browser check will be skipped"
  fi
fi
