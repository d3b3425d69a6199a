# Sourced by the peer scripts (.ci/recbole.sh, ...) and .ci/run: where a peer tool's virtual
# environment lives and how it is made.
#
# A peer venv is keyed to what it holds: its path ends in a hash of the script that fills it and
# of the interpreter that runs the tests (sys.prefix and version), so a clone, a changed script or
# another (virtual) environment never reuses a stale one. NAME_VENV (RECBOLE_VENV, ...) overrides
# the path. A venv that shares the test environment's packages (torch, numpy, pandas for RecBole
# and Cornac) gets them through a .pth file listing that interpreter's own site directories: a
# venv made with --system-site-packages from inside another venv would see the *base*
# interpreter's packages instead.

# peer_venv_path NAME SCRIPT: print the venv's path
peer_venv_path() {
  local name="$1" script="$2" var key
  var="$(printf '%s' "$name" | tr '[:lower:]' '[:upper:]')_VENV"
  if [ -n "${!var:-}" ]; then
    printf '%s\n' "${!var}"
    return
  fi
  key="$({ cat "$script"; python -c 'import sys; print(sys.prefix, sys.version)'; } \
    | sha256sum | cut -c1-12)"
  printf '%s\n' "${RECEVAL_PEERS_DIR:-/tmp/receval-peers}/$name-$key"
}

# peer_venv_make VENV SHARE: a fresh venv at VENV (an old one there is removed); SHARE=1: it
# also sees the packages of the interpreter that runs the tests, after its own
peer_venv_make() {
  local venv="$1" share="$2" site
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python -m venv "$venv"
  if [ "$share" = 1 ]; then
    site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    python -c 'import sys; print("\n".join(p for p in sys.path if p.endswith(("site-packages", "dist-packages"))))' \
      > "$site/_receval_test_env.pth"
  fi
}
