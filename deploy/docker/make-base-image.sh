#!/usr/bin/env bash
# Assembles a local Node 20 base image for machines that reach no container registry: a rootfs of
# this host's node binary, the libraries `ldd` lists for it, a shell and the two tools the
# Dockerfiles' RUN line needs (mkdir, chown), minimal /etc/passwd and /etc/group, and, when the
# Debian package can be fetched, the Mozilla CA list from the ca-certificates .deb (never the
# host's own bundle, which may hold a private CA). `docker import`s it as $FELIX_BASE_IMAGE.
#
#   deploy/docker/make-base-image.sh            # builds felix-node-base:20 unless it exists
#   FELIX_BASE_REBUILD=1 deploy/docker/make-base-image.sh
set -euo pipefail
DOCKER=${DOCKER:-/usr/bin/docker}
IMAGE=${FELIX_BASE_IMAGE:-felix-node-base:20}

if [ -z "${FELIX_BASE_REBUILD:-}" ] && "$DOCKER" image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "make-base-image: $IMAGE already exists"
  exit 0
fi
NODE_BIN=$(readlink -f "$(command -v node)")
major=$("$NODE_BIN" -p 'process.versions.node.split(".")[0]')
if [ "$major" != 20 ]; then
  echo "make-base-image: host node is $("$NODE_BIN" -v), want 20 (native modules are built for it)" >&2
  exit 1
fi

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

# Each binary goes to its own path, and each library to the path ldd resolved it at.
copy_with_libs() {
  local bin=$1 dest=$2
  mkdir -p "$root$(dirname "$dest")"
  cp -L "$bin" "$root$dest"
  ldd "$bin" | awk '/=> \//{print $3} /^\t\//{print $1}' | while read -r lib; do
    [ -e "$root$lib" ] || { mkdir -p "$root$(dirname "$lib")"; cp -L "$lib" "$root$lib"; }
  done
}
copy_with_libs "$NODE_BIN" /usr/local/bin/node
copy_with_libs "$(readlink -f /bin/sh)" /bin/sh
copy_with_libs "$(command -v mkdir)" /bin/mkdir
copy_with_libs "$(command -v chown)" /bin/chown

mkdir -p "$root/etc" "$root/tmp" "$root/usr/sbin" "$root/etc/ssl/certs"
chmod 1777 "$root/tmp"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"

# The public CA list from Debian's package, not the host's /etc/ssl (which may trust private CAs).
deb_dir=$(mktemp -d)
if (cd "$deb_dir" && apt-get download ca-certificates >/dev/null 2>&1); then
  dpkg-deb -x "$deb_dir"/ca-certificates_*.deb "$deb_dir/x"
  find "$deb_dir/x/usr/share/ca-certificates/mozilla" -name '*.crt' -print0 | sort -z \
    | xargs -0 cat >"$root/etc/ssl/certs/ca-certificates.crt"
  echo "make-base-image: CA list from the ca-certificates package"
else
  echo "make-base-image: ca-certificates .deb not fetched; the image relies on node's bundled CAs"
fi
rm -rf "$deb_dir"

tar -C "$root" -c . | "$DOCKER" import \
  -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
  -c 'CMD ["node"]' \
  -m "felix: host node $("$NODE_BIN" -v) and its libraries" - "$IMAGE" >/dev/null
echo "make-base-image: built $IMAGE ($("$DOCKER" image inspect -f '{{.Size}}' "$IMAGE") bytes, node $("$NODE_BIN" -v))"
