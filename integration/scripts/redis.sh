#!/usr/bin/env bash
# redis.sh: the redis-server the redisstore tests start on their own (on
# 127.0.0.1 and a free port, stopped when the test ends).
#
#   redis.sh install   make sure redis-server is on PATH; print its version
#
# install is idempotent and instant when redis-server is already there.
# Otherwise, as root, it installs Debian's redis-server package (Redis 7)
# with apt-get, and keeps the package's system service from running: the
# tests need no server on 6379, and nothing may keep running after them.
# Not root: it says how to install it, and fails.
#
# Valkey works too: put valkey-server on PATH as redis-server.
set -euo pipefail

say() { echo "redis: $*" >&2; }
die() {
	echo "redis: ERROR: $*" >&2
	exit 1
}

version() { redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p'; }

# no_service stops and disables the system service the package may have
# started (systemd, or the SysV script when there is no systemd).
no_service() {
	if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
		systemctl disable --now redis-server >/dev/null 2>&1 || true
	elif [[ -x /etc/init.d/redis-server ]]; then
		/etc/init.d/redis-server stop >/dev/null 2>&1 || true
		command -v update-rc.d >/dev/null 2>&1 && update-rc.d redis-server disable >/dev/null 2>&1 || true
	fi
}

install() {
	if command -v redis-server >/dev/null 2>&1; then
		say "redis-server $(version) ($(command -v redis-server))"
		return
	fi
	if [[ "$(id -u)" != 0 ]]; then
		die "redis-server not found on PATH. Install it, e.g.:
  Debian/Ubuntu:  sudo apt-get install redis-server   (then: sudo systemctl disable --now redis-server)
  macOS:          brew install redis
  or Valkey:      a valkey-server binary on PATH as redis-server
The tests start their own server on a free port; no service is needed."
	fi
	command -v apt-get >/dev/null 2>&1 || die "redis-server not found and no apt-get to install it: install redis-server (Redis 7+ or Valkey) yourself"

	# Keep the package from starting its service while it installs
	# (policy-rc.d exit 101: "action forbidden"), unless a policy is already
	# in place (containers usually have one).
	local policy=/usr/sbin/policy-rc.d added=""
	if [[ ! -e "$policy" ]]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod 755 "$policy"
		added=1
		trap 'rm -f "$policy"' EXIT
	fi
	say "installing Debian's redis-server (apt-get)"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null
	[[ -n "$added" ]] && rm -f "$policy" && trap - EXIT
	no_service
	command -v redis-server >/dev/null 2>&1 || die "apt-get installed redis-server but it is not on PATH"
	say "redis-server $(version) ($(command -v redis-server)); system service stopped and disabled"
}

case "${1:-}" in
install) install ;;
*) die "usage: $0 install" ;;
esac
