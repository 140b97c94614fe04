#!/usr/bin/env bash
# it_deploy_manifests: checks deploy/compose and deploy/k8s without a
# container engine or a cluster (neither runs in CI, so the image itself is
# never built here). 1) yamllint parses and lints every YAML file. 2)
# deploy/k8s/check_manifests.py checks every Kubernetes object against the
# API schema of Debian's python3-kubernetes and baton's own rules, and the
# compose file's structure; a deliberately broken copy must fail it. 3)
# docker-compose (v1, Debian's, which validates offline) checks the compose
# file against its schema where installed. 4) Every properties file the
# manifests ship is accepted by the real daemons' --config parser. 5) The
# Dockerfile installs the -dev package of every pkg-config module
# CMakeLists.txt requires and copies only files that exist. 6) The image's
# scripts work against a real ZooKeeper, worker and PostgreSQL:
# baton-prestop drains a worker and waits until it owns nothing;
# baton-entrypoint undrains it on the next start and turns a password file
# (with ':' and '\' in the password) into a PGPASSFILE the sink connects with.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
source "$BATON_SRC/tests/lib/pg.sh"
h_init it_deploy_manifests
D=$BATON_SRC/deploy
PY=/usr/bin/python3

# 1) YAML parse and lint (warnings fail too).
command -v yamllint >/dev/null || h_fail "yamllint is not installed (deploy/setup.sh installs it)"
yamllint -s -d '{extends: default, rules: {line-length: {max: 120}, document-start: disable,
    truthy: {allowed-values: ["true", "false"], check-keys: false}, comments: {min-spaces-from-content: 1}}}' \
    "$D/compose" "$D/k8s" || h_fail "yamllint found problems"
h_log "yamllint: ok"

# 2) schema and structure.
"$PY" -c 'import yaml, kubernetes.client' 2>/dev/null ||
    h_fail "$PY lacks python3-yaml or python3-kubernetes (deploy/setup.sh installs them)"
mkdir -p "$H_DIR/props"
"$PY" "$D/k8s/check_manifests.py" "$D/k8s" "$D/compose/docker-compose.yml" "$H_DIR/props" ||
    h_fail "check_manifests.py found problems"
# The checker must be able to fail: a typo, a string for an integer, a
# missing preStop and a literal password are each reported.
cp -r "$D/k8s" "$H_DIR/bad"
sed -i 's/^  replicas: 2/  replica: 2/' "$H_DIR/bad/coordinator.yaml"
sed -i 's/terminationGracePeriodSeconds: 120/terminationGracePeriodSeconds: "120"/; s/baton-prestop/true/' \
    "$H_DIR/bad/worker.yaml"
sed -i 's|value: /run/secrets/baton-pg/password|value: /x\n            - name: PGPASSWORD\n              value: hunter2|' \
    "$H_DIR/bad/worker.yaml"
rc=0
"$PY" "$D/k8s/check_manifests.py" "$H_DIR/bad" "$D/compose/docker-compose.yml" "$H_DIR/bad" 2>"$H_DIR/bad.err" || rc=$?
cat "$H_DIR/bad.err" >&2
((rc == 1)) || h_fail "the broken manifests were not refused (exit $rc)"
for want in "unknown field 'replica'" "terminationGracePeriodSeconds: expected an integer" \
    "no preStop hook" "env PGPASSWORD has a literal value"; do
    grep -qF -- "$want" "$H_DIR/bad.err" || h_fail "the checker did not report: $want"
done
h_log "schema and structure: ok (and a broken copy is refused)"

# 3) compose schema, where Debian's docker-compose is installed.
if command -v docker-compose >/dev/null; then
    docker-compose -f "$D/compose/docker-compose.yml" config -q 2>"$H_DIR/compose.err" ||
        { cat "$H_DIR/compose.err" >&2; h_fail "docker-compose config refused the compose file"; }
    if grep -q 'will be ignored' "$H_DIR/compose.err"; then
        cat "$H_DIR/compose.err" >&2
        h_fail "docker-compose ignores part of the compose file"
    fi
    h_log "docker-compose config: ok"
else
    h_log "docker-compose not installed: compose schema check skipped"
fi

# 4) every shipped properties file parses in the real daemons: with the
# settings that need a network overridden by flags, they must get past the
# parser (exit 1: ZooKeeper unreachable), never exit 2.
cp "$D/compose/config/coordinator.properties" "$H_DIR/props/compose-coordinator.properties"
cp "$D/compose/config/worker.properties" "$H_DIR/props/compose-worker.properties"
dead=127.0.0.1:$(h_free_port)
for f in "$H_DIR"/props/*.properties; do
    case $f in
    *coordinator*) cmd=("$BATON_BIN/baton-coordinator" --config "$f" --zk "$dead" --connect-timeout-ms 300) ;;
    *) cmd=("$BATON_BIN/baton-worker" --config "$f" --id probe --zk "$dead" --connect-timeout-ms 300
            --sink "sqlite:$H_DIR/probe.db") ;;
    esac
    rc=0
    timeout 30 "${cmd[@]}" >"$H_DIR/probe.log" 2>&1 || rc=$?
    ((rc == 1)) || { cat "$H_DIR/probe.log" >&2; h_fail "$(basename "$f"): the daemon exited $rc, not 1"; }
done
h_log "properties files: ok"

# 5) the Dockerfile against CMakeLists.txt.
df=$D/compose/Dockerfile
for mod in $(sed -n 's/.*pkg_check_modules([A-Z0-9_]* REQUIRED IMPORTED_TARGET \([^ )]*\).*/\1/p' \
    "$BATON_SRC/CMakeLists.txt"); do
    pc=$(pkg-config --variable=pcfiledir "$mod")/$mod.pc
    pkg=$(dpkg -S "$pc" 2>/dev/null | head -1 | cut -d: -f1) || true
    [[ -n $pkg ]] || h_fail "no Debian package owns $pc"
    grep -qw -- "$pkg" "$df" || h_fail "the Dockerfile does not install $pkg (pkg-config module $mod)"
done
grep -qw libzookeeper-mt-dev "$df" || h_fail "the Dockerfile does not install libzookeeper-mt-dev"
for f in deploy/compose/bin/baton-entrypoint deploy/compose/bin/baton-prestop deploy/compose/bin/baton-props; do
    grep -qF "$f" "$df" || h_fail "the Dockerfile does not copy $f"
    [[ -f $BATON_SRC/$f ]] || h_fail "$f is missing"
    bash -n "$BATON_SRC/$f" || h_fail "$f: bash syntax error"
done
h_log "Dockerfile: ok"

# 6) the image's scripts against a real cluster on loopback.
h_zk_start
pg_start
pg_use_sink
B_PARTITIONS=6
h_kafka_start "$B_TOPIC" $B_PARTITIONS
b_init $B_PARTITIONS
b_coord c1
b_worker w1
b_worker w2
h_wait_for 30 "w1 and w2 own everything" b_all_active 2
cat >"$H_DIR/w.properties" <<PROPS
zookeeper.connect=$ZK
group=$B_GROUP
PROPS
export PATH="$BATON_BIN:$PATH"
rc=0
BATON_CONFIG=$H_DIR/w.properties BATON_ID=w1 BATON_DRAIN_WAIT_S=30 BATON_DRAIN_SWITCH=$H_DIR/none \
    timeout 60 "$D/compose/bin/baton-prestop" || rc=$?
((rc == 0)) || h_fail "baton-prestop exited $rc"
[[ -z $(b_partitions_of w1) ]] || h_fail "baton-prestop returned while w1 still owns $(b_partitions_of w1)"
b_jq '.workers[] | select(.id == "w1") | .draining == true' >/dev/null ||
    { b_status >&2; h_fail "w1 is not marked draining"; }
h_log "baton-prestop drained w1"
h_stop w1
rc=0; h_wait_exit w1 10 || rc=$?
((rc == 0)) || h_fail "w1 did not leave gracefully ($rc)"

# A password with a ':' and a '\' tests the passfile escaping.
pg_admin "ALTER ROLE baton PASSWORD 'p:w\\x'" >/dev/null
printf '%s\n' 'p:w\x' >"$H_DIR/pgpw"
chmod 600 "$H_DIR/pgpw"
h_spawn w1 env -u PGPASSFILE -u PGPASSWORD BATON_CONFIG="$H_DIR/w.properties" BATON_ID=w1 \
    BATON_UNDRAIN_ON_START=1 BATON_PGPASSWORD_FILE="$H_DIR/pgpw" \
    "$D/compose/bin/baton-entrypoint" worker --brokers "$BOOTSTRAP" --sink "$PG_URI" \
    --session-timeout-ms "$B_SESSION_MS" --linger-ms 10
h_wait_for 30 "w1 undrained and owning partitions again" b_all_active 2
b_log_has w1 "event=sink_opened" || h_fail "w1 did not open the PostgreSQL sink"
if grep -lF 'p:w' "$H_DIR"/*.log; then
    h_fail "the password appears in a log"
fi
h_pass "manifests parse and pass the schema and baton's rules; the image's scripts drain, undrain and pass the password as a file"
