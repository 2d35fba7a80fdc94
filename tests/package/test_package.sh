#!/usr/bin/env bash
# The Debian package of a build tree, end to end: cpack -G DEB there, dpkg -i, the installed unit
# through systemd-analyze verify, perfwatch run as the package's user on the shipped configuration,
# the man page and bash completion, config.yaml kept over a reinstall, then dpkg --remove and
# --purge leave nothing behind (the package's files, /etc/perfwatch, /var/lib/perfwatch, the unit's
# enablement, the user and group). Needs root and a machine where neither the package nor a
# perfwatch user exists; exits 77 (ctest: skipped) otherwise, or fails in CI (CI=true).
# Usage: tests/package/test_package.sh BUILD_DIR
set -euo pipefail
build=$(realpath "$1")

cannot() {
  if [ "${CI:-}" = true ]; then
    echo "FAIL: $1 (CI=true: the package test must run)" >&2
    exit 1
  fi
  echo "SKIP: $1"
  exit 77
}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
step() { echo "== $*"; }

[ "$(id -u)" -eq 0 ] || cannot "needs root (dpkg -i)"
for tool in cpack dpkg dpkg-deb dpkg-shlibdeps systemd-analyze runuser getent; do
  command -v "$tool" >/dev/null || cannot "$tool not found (scripts/deps.sh installs it)"
done
[ -f "$build/CPackConfig.cmake" ] || fail "$build is not a configured build tree"
state=$(dpkg-query -W -f='${db:Status-Status}' perfwatch 2>/dev/null || true)
if [ -n "$state" ] && [ "$state" != not-installed ]; then
  cannot "the perfwatch package is on this machine ($state): the test would purge it"
fi
getent passwd perfwatch >/dev/null && cannot "a perfwatch user exists: purging the package would delete it"
getent group perfwatch >/dev/null && cannot "a perfwatch group exists: purging the package would delete it"

work=$(mktemp -d)
installed=false
cleanup() {
  if $installed; then dpkg --purge perfwatch >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
# Everything named *perfwatch* in the system's trees, before and after: purge must restore it.
# Temporary directories are left out (the suite's other tests make perfwatch-test-* there).
leftovers() {
  find /etc /lib /usr /var /srv /opt \( -path /var/tmp -o -path "${TMPDIR:-/tmp}" \) -prune \
    -o -name '*perfwatch*' -print 2>/dev/null | sort
}
leftovers >"$work/before"

step "cpack -G DEB in $build"
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/cpack" >"$work/cpack.log" 2>&1 \
  || { cat "$work/cpack.log"; fail "cpack"; }
deb=$(find "$work/cpack" -maxdepth 1 -name 'perfwatch_*.deb')
[ -f "$deb" ] || fail "cpack made no perfwatch_*.deb: $(ls "$work/cpack")"
echo "$deb"
dpkg-deb -c "$deb" | awk '{ print $NF }' | sed 's|^\./|/|; s|/$||' >"$work/contents"
# The unit's directory is systemd.pc's (/lib/systemd/system on Debian 12).
unit=$(grep -x '.*/systemd/system/perfwatch.service' "$work/contents") || fail "the package lacks the systemd unit"
for path in /usr/bin/perfwatch /usr/share/man/man1/perfwatch.1.gz /usr/share/bash-completion/completions/perfwatch \
  /etc/perfwatch/config.yaml /usr/share/doc/perfwatch/copyright /usr/share/doc/perfwatch/changelog.Debian.gz; do
  grep -qx "$path" "$work/contents" || fail "the package lacks $path"
done
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
[[ $depends == *libc6* && $depends == *adduser* ]] || fail "Depends lacks dpkg-shlibdeps' libc6 or adduser"
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -qx /etc/perfwatch/config.yaml \
  || fail "config.yaml is not a conffile"

step "dpkg -i"
installed=true
dpkg -i "$deb"
getent passwd perfwatch >/dev/null || fail "postinst made no perfwatch user"
[ "$(stat -c %U /var/lib/perfwatch/reports)" = perfwatch ] || fail "/var/lib/perfwatch/reports is not the user's"

step "systemd-analyze verify"
# Offline: it loads the unit and the units it names from disk and checks the executables exist;
# no running systemd is needed (this runs in containers without one).
verify=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify: $verify"
[ -z "$verify" ] || fail "systemd-analyze verify has remarks: $verify"
grep -qx 'ExecStart=/usr/bin/perfwatch daemon --config /etc/perfwatch/config.yaml' "$unit" \
  || fail "the unit does not start /usr/bin/perfwatch"

step "perfwatch as the perfwatch user"
version=$(runuser -u perfwatch -- perfwatch --version)
echo "$version"
[ "$version" = "perfwatch $(dpkg-deb -f "$deb" Version | sed 's/-[^-]*$//')" ] || fail "version '$version'"
runuser -u perfwatch -- perfwatch config check /etc/perfwatch/config.yaml || fail "config check of the shipped config.yaml"

step "man page and bash completion"
zcat /usr/share/man/man1/perfwatch.1.gz | grep -q '^\.SS "perfwatch config check' || fail "man page lacks config check"
completion=$(bash -c 'source /usr/share/bash-completion/completions/perfwatch
  COMP_WORDS=(perfwatch rules l); COMP_CWORD=2; _perfwatch; echo "${COMPREPLY[*]}"
  COMP_WORDS=(perfwatch check --format j); COMP_CWORD=3; _perfwatch; echo "${COMPREPLY[*]}"')
echo "$completion"
[ "$completion" = $'lint list\njson junit' ] || fail "bash completion: $completion"

step "reinstall keeps a changed config.yaml"
echo "# changed by the administrator" >>/etc/perfwatch/config.yaml
dpkg -i "$deb" >/dev/null
grep -q "changed by the administrator" /etc/perfwatch/config.yaml || fail "the reinstall replaced config.yaml"

step "dpkg --remove"
dpkg --remove perfwatch
[ ! -e /usr/bin/perfwatch ] || fail "/usr/bin/perfwatch left after remove"
[ -f /etc/perfwatch/config.yaml ] || fail "remove deleted the conffile (only purge should)"

step "dpkg --purge"
dpkg --purge perfwatch
installed=false
while read -r path; do
  if [ -e "$path" ] && [ ! -d "$path" ]; then fail "$path left after purge"; fi
done <"$work/contents"
for path in /etc/perfwatch /var/lib/perfwatch "$unit"; do
  [ ! -e "$path" ] || fail "$path left after purge"
done
getent passwd perfwatch >/dev/null && fail "user perfwatch left after purge"
getent group perfwatch >/dev/null && fail "group perfwatch left after purge"
leftovers >"$work/after"
diff "$work/before" "$work/after" || fail "purge left these behind (> lines)"
echo "PASS: package installed, verified, run as perfwatch, removed and purged without leftovers"
