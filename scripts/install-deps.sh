#!/usr/bin/env bash
# Installs what `make test` needs and a fresh machine may lack: Node.js and
# npm (the npm client tests, the AssemblyScript example, the web console),
# clang, lld and wasi-libc (the C example plugin), rustc with its wasm32-wasi standard
# library (the Rust example plugin), Chromium (the console's end-to-end
# test, driven by playwright-core with Debian's browser), PostgreSQL, Redis
# and nginx (the cluster-mode tests start their own throwaway servers:
# the system services are installed but not started). Go and make must be there already. Used by `make test`
# and by .ci/run. Debian/Ubuntu (apt-get); as root it installs, otherwise
# it says what to install and fails.
set -euo pipefail

if ! command -v go >/dev/null 2>&1; then
  echo "install-deps: Go is not on PATH; install Go $(sed -n 's/^go //p' "$(dirname "$0")/../go.mod") from https://go.dev/dl/" >&2
  exit 1
fi

need=()
{ command -v node && command -v npm; } >/dev/null 2>&1 || need+=(nodejs npm)
clang=""
for c in clang-14 clang; do
  if command -v "$c" >/dev/null 2>&1; then clang=$c; break; fi
done
[ -n "$clang" ] || need+=(clang-14)
{ command -v chromium || command -v chromium-browser; } >/dev/null 2>&1 || need+=(chromium)
# PostgreSQL's server binaries are off PATH on Debian
# (/usr/lib/postgresql/<version>/bin); host/store/pgtest finds them there.
have_postgres() {
  command -v initdb >/dev/null 2>&1 && return 0
  for d in /usr/lib/postgresql/*/bin; do [ -x "$d/initdb" ] && return 0; done
  return 1
}
have_postgres || need+=(postgresql)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
{ command -v nginx || [ -x /usr/sbin/nginx ]; } >/dev/null 2>&1 || need+=(nginx)
# poppler's pdftotext: the oracle the file-parser's pdf-text engine is
# compared with (plugins/file-parser/fileparser, TestPdftotextAgreement);
# a test tool only, never used by the gateway.
command -v pdftotext >/dev/null 2>&1 || need+=(poppler-utils)
# wasm-ld as clang will look for it.
if [ -z "$clang" ] || ! command -v "$("$clang" -print-prog-name=wasm-ld)" >/dev/null 2>&1; then
  command -v wasm-ld-14 >/dev/null 2>&1 || command -v wasm-ld >/dev/null 2>&1 || need+=(lld-14)
fi

# wasi-libc and compiler-rt's wasm32 builtins: the C guest library
# abi/c/switchyard.h (the C example, syctl plugin new --lang c) links
# against libc (malloc, strings, printf) with clang --target=wasm32-wasi.
if [ -n "$clang" ] && ! echo 'int main(void){return 0;}' | "$clang" --target=wasm32-wasi -mexec-model=reactor -x c -o /dev/null - >/dev/null 2>&1; then
  [ -d /usr/lib/wasm32-wasi ] || need+=(wasi-libc)
  need+=(libclang-rt-14-dev-wasm32)
elif [ -z "$clang" ]; then
  need+=(wasi-libc libclang-rt-14-dev-wasm32)
fi

# Debian's rustc and its wasm32-wasi standard library (the Rust example,
# examples/Makefile, which uses /usr/bin/rustc): a rustup toolchain elsewhere
# on PATH does not count, its wasm32 target would need rustup's dist server.
if [ ! -x /usr/bin/rustc ]; then
  need+=(rustc libstd-rust-dev-wasm32)
elif [ ! -d "$(/usr/bin/rustc --print sysroot)/lib/rustlib/wasm32-wasi/lib" ] &&
  [ ! -d "$(/usr/bin/rustc --print sysroot)/lib/rustlib/wasm32-wasip1/lib" ]; then
  need+=(libstd-rust-dev-wasm32)
fi

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: missing ${need[*]}." >&2
  echo "  On Debian/Ubuntu run: sudo apt-get install -y ${need[*]}" >&2
  echo "  (elsewhere: Node.js with npm, clang with lld that can target wasm32, and rustc with the wasm32-wasi standard library), then make test again." >&2
  exit 1
fi
echo "install-deps: installing ${need[*]}"
# Do not start the services the packages bring (postgresql, redis-server,
# nginx): the tests start their own on free ports. policy-rc.d is how
# Debian's maintainer scripts are told so; ours goes away afterwards.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi
install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"; }
# apt-get update only when the package lists are missing or too old to
# install from.
if ! ls /var/lib/apt/lists/*_Packages >/dev/null 2>&1; then
  apt-get update -qq
fi
install || { apt-get update -qq && install; }
