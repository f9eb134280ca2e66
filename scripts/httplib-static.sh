#!/usr/bin/env bash
# Builds a static libcpp-httplib.a for the static tandem-server (TANDEM_STATIC, docs/arm64.md).
#
#   bash scripts/httplib-static.sh OUT_DIR [CXX]     ->  OUT_DIR/libcpp-httplib.a
#
# Debian packages cpp-httplib as a shared library only (its header is the declarations half of
# upstream's split). This builds the other half from Debian's own source package of the installed
# version: the source is fetched from the Debian archive (a deb-src entry in a private apt
# configuration under OUT_DIR, so the machine's sources are left alone), unpacked with its Debian
# patches, split with upstream's split.py as Debian's build does, checked to give exactly the
# installed /usr/include/httplib.h, and compiled with Debian's defines (OpenSSL, zlib, Brotli,
# poll). CXX defaults to aarch64-linux-gnu-g++. Needs apt-get, dpkg-source (dpkg-dev), python3.
# A second run reuses OUT_DIR.
set -euo pipefail
out=${1:?usage: httplib-static.sh OUT_DIR [CXX]}
cxx=${2:-aarch64-linux-gnu-g++}
mkdir -p "$out"
out=$(cd "$out" && pwd)
lib="$out/libcpp-httplib.a"
[ -f "$lib" ] && { echo "$lib"; exit 0; }

version=$(dpkg-query -W -f='${Version}\n' libcpp-httplib-dev 2>/dev/null | head -n1) ||
  { echo "FAILED: libcpp-httplib-dev is not installed (scripts/install-deps.sh)" >&2; exit 1; }
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
apt_dir="$out/apt"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/sources"
cat > "$apt_dir/sources/debian-src.sources" <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $suite $suite-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
apt_opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt_dir/sources"
          -o "Dir::State::Lists=$apt_dir/lists" -o APT::Sandbox::User=root)
src="$out/src"
rm -rf "$src"
mkdir -p "$src"
apt-get "${apt_opts[@]}" update -qq
(cd "$src" && apt-get "${apt_opts[@]}" source -qq --download-only "cpp-httplib=$version")
# apt checked the files against the archive's signed Sources index; dpkg-source's own check of
# the .dsc signature needs debian-keyring, hence its warning in the log.
dpkg-source -x "$src"/cpp-httplib_*.dsc "$src/tree" >"$src/dpkg-source.log" 2>&1 ||
  { cat "$src/dpkg-source.log" >&2; exit 1; }

# Upstream's split.py finds httplib.h beside itself (absolute path) and writes OUT/httplib.{h,cc}.
mkdir -p "$src/split"
python3 "$src/tree/split.py" -o "$src/split" >/dev/null
cmp -s "$src/split/httplib.h" /usr/include/httplib.h ||
  { echo "FAILED: the split header of cpp-httplib $version differs from /usr/include/httplib.h" >&2; exit 1; }

# The defines of Debian's build (debian/rules, the .pc file's Cflags): the class layouts the
# header declares depend on them.
cc=()
command -v ccache >/dev/null && cc=(ccache)
"${cc[@]}" "$cxx" -O2 -std=c++17 -DCPPHTTPLIB_OPENSSL_SUPPORT -DCPPHTTPLIB_ZLIB_SUPPORT -DCPPHTTPLIB_BROTLI_SUPPORT \
  -DCPPHTTPLIB_USE_POLL -I"$src/split" -c "$src/split/httplib.cc" -o "$src/httplib.o"
ar=${cxx%g++}gcc-ar
command -v "$ar" >/dev/null || ar=ar
"$ar" rcs "$lib" "$src/httplib.o"
echo "$lib"
