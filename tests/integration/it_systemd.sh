#!/usr/bin/env bash
# it_systemd: the systemd units pass `systemd-analyze verify` (against the
# build tree's binaries), carry the hardening they promise, and
# `cmake --install` lays out binaries, units, example configs and man pages.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
h_init it_systemd
build=$(cd "$BATON_BIN/.." && pwd)
units=$build/deploy/systemd-test
[[ -f $units/baton-coordinator.service && -f $units/baton-worker@.service ]] ||
    h_fail "units not generated in $units"
(cd "$units" && timeout 60 systemd-analyze verify --man=no ./baton-coordinator.service ./baton-worker@w1.service) \
    >"$H_DIR/verify.out" 2>&1 || h_fail "systemd-analyze verify failed: $(cat "$H_DIR/verify.out")"
for u in baton-coordinator.service baton-worker@.service; do
    for d in 'Restart=on-failure' 'NoNewPrivileges=yes' 'ProtectSystem=strict' 'DynamicUser=yes' 'KillSignal=SIGTERM' \
        'KillMode=control-group'; do
        grep -qx "$d" "$units/$u" || h_fail "$u lacks $d"
    done
done
grep -q -- '--id %i' "$units/baton-worker@.service" || h_fail "worker unit does not take its id from the instance"
# The unit's ExecStart must be a command line the worker accepts.
exec_line=$(sed -n 's/^ExecStart=//p' "$units/baton-worker@.service" | sed 's/%i/w1/')
rc=0; $exec_line --help >/dev/null 2>&1 || rc=$?
((rc == 0)) || h_fail "the worker rejects its unit's flags ($rc)"

# Installed into a scratch DESTDIR at the configured prefix.
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
DESTDIR=$H_DIR/root cmake --install "$build" >"$H_DIR/install.out" 2>&1 ||
    h_fail "cmake --install failed: $(tail -5 "$H_DIR/install.out")"
r=$H_DIR/root$prefix
for f in bin/baton-coordinator bin/baton-worker bin/batonctl \
    lib/systemd/system/baton-coordinator.service lib/systemd/system/baton-worker@.service \
    etc/baton/worker.properties etc/baton/coordinator.properties; do
    [[ -e $r/$f ]] || h_fail "not installed: $prefix/$f"
done
grep -q "^ExecStart=$prefix/bin/baton-worker --config $prefix/etc/baton/worker.properties --id %i\$" \
    "$r/lib/systemd/system/baton-worker@.service" || h_fail "installed unit names the wrong paths"
if command -v help2man >/dev/null; then
    [[ -s $r/share/man/man1/baton-worker.1 ]] || h_fail "man page not installed"
fi
h_pass "units verify, are hardened, and install"
