#!/usr/bin/env bash
# it_kafka_tls: a misconfigured Kafka TLS fails closed. librdkafka's mock
# cluster has no TLS, so a TLS listener on loopback (`openssl s_server`, a
# throwaway CA and a server certificate for IP 127.0.0.1) stands in for the
# broker: the handshake is all that is tested. baton-worker, given the
# --kafka TLS settings unchanged, must refuse
#   1. a broker whose certificate an unrelated CA (ssl.ca.location) did not
#      sign ("certificate verify failed"), and
#   2. a broker whose certificate the right CA signed for another host name
#      (ssl.endpoint.identification.algorithm=https),
# by exiting 1 within a bounded time with an event=kafka_fatal line naming
# the TLS problem, having written nothing to the sink. batonctl's lag
# reading (status --brokers) gives a bounded, clear error the same way.
# baton-coordinator's rack lookup, given the same settings, refuses both
# certificates, and with the right CA (and SASL/PLAIN credentials) reads
# the leaders' racks through a TLS front (tests/lib/kafka_tls_proxy.py) of
# the embedded Kafka; a SASL mechanism it does not speak turns rack
# preference off at start with a line saying why.
# Secret settings (ssl.key.password, sasl.password) appear in no log and no
# --help. A control proves the listener and CA are good (s_client with the
# right CA and name verifies), so the failures are the misconfiguration's.
set -euo pipefail
source "${BATON_SRC:?}/tests/lib/harness.sh"
source "$BATON_SRC/tests/lib/baton.sh"
h_init it_kafka_tls
command -v openssl >/dev/null || h_fail "openssl is not installed (deploy/setup.sh installs it)"
h_zk_start
B_SINK=$H_DIR/sink.db
b_init 2
b_coord c1

# --- a CA, a server certificate for 127.0.0.1, one for another name, and an
# unrelated CA ---------------------------------------------------------------
T=$H_DIR/tls
mkdir -p "$T"
ossl() { openssl "$@" >>"$T/openssl.log" 2>&1 || { cat "$T/openssl.log" >&2; h_fail "openssl $1 failed"; }; }
ossl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=baton test CA" -keyout "$T/ca.key" -out "$T/ca.pem"
ossl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=unrelated CA" -keyout "$T/other.key" -out "$T/other.pem"
server_cert() { # NAME SAN
    ossl req -newkey rsa:2048 -nodes -subj "/CN=$1" -keyout "$T/$1.key" -out "$T/$1.csr"
    printf 'subjectAltName=%s\n' "$2" >"$T/$1.ext"
    ossl x509 -req -in "$T/$1.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial \
        -days 2 -extfile "$T/$1.ext" -out "$T/$1.pem"
}
server_cert good IP:127.0.0.1
server_cert misnamed DNS:not-this-host.invalid

# --- the TLS listeners ---------------------------------------------------------
tls_listen() { # CERT PORT: a TLS listener serving CERT on 127.0.0.1:PORT
    h_spawn "tls_$1" openssl s_server -accept "127.0.0.1:$2" -cert "$T/$1.pem" -key "$T/$1.key" -www -quiet
    h_wait_for 15 "the TLS listener $1 on port $2" _h_port_listening "$2" || h_fail "no TLS listener"
}
PORT_good=$(h_free_port)
PORT_misnamed=$(h_free_port)
tls_listen good "$PORT_good"
tls_listen misnamed "$PORT_misnamed"

# Control: the listener and the CA are good; the unrelated CA is refused.
s_client() { # PORT CAFILE
    timeout 10 openssl s_client -connect "127.0.0.1:$1" -CAfile "$2" -verify_ip 127.0.0.1 \
        -verify_return_error -brief </dev/null >"$T/s_client.out" 2>&1
}
s_client "$PORT_good" "$T/ca.pem" || { cat "$T/s_client.out" >&2; h_fail "control: s_client cannot verify the good listener with the CA"; }
if s_client "$PORT_good" "$T/other.pem"; then h_fail "control: s_client accepted the unrelated CA"; fi
# The misnamed certificate's chain is good; only its name is wrong.
timeout 10 openssl s_client -connect "127.0.0.1:$PORT_misnamed" -CAfile "$T/ca.pem" \
    -verify_return_error -brief </dev/null >"$T/s_client.out" 2>&1 ||
    { cat "$T/s_client.out" >&2; h_fail "control: the misnamed certificate's chain does not verify"; }
if s_client "$PORT_misnamed" "$T/ca.pem"; then h_fail "control: s_client accepted the misnamed certificate for 127.0.0.1"; fi
h_log "control: the listener verifies with its CA and not with the unrelated one; the misnamed one fails only on the name"

SECRET_KEY_PW="keypw-$RANDOM-SECRET123"
SECRET_SASL_PW="saslpw-$RANDOM-SECRET456"
# The secrets come from a --config file (kafka.KEY=VALUE, off the command
# line, as docs/configuration.md advises) for one worker and from --kafka flags for
# the other: neither way may they reach a log line.
printf 'kafka.ssl.key.password=%s\nkafka.sasl.password=%s\n' "$SECRET_KEY_PW" "$SECRET_SASL_PW" >"$T/secrets.properties"
tls_worker() { # NAME BROKERS CAFILE SECRETS...
    local name=$1 brokers=$2 ca=$3
    shift 3
    h_spawn "$name" "$BATON_BIN/baton-worker" --zk "$ZK" --group "$B_GROUP" --id "$name" \
        --brokers "$brokers" --sink "sqlite:$B_SINK" --session-timeout-ms "$B_SESSION_MS" \
        --kafka security.protocol=ssl --kafka "ssl.ca.location=$ca" \
        --kafka ssl.endpoint.identification.algorithm=https "$@"
}
expect_fatal() { # NAME WHAT PATTERN
    local rc=0
    h_wait_exit "$1" 60 || rc=$?
    ((rc == 1)) || h_fail "$2: the worker exited $rc, not 1 (fail closed)"
    b_log_has "$1" 'event=kafka_fatal' || h_fail "$2: no event=kafka_fatal line"
    b_log_has "$1" "event=kafka_fatal.*$3" || { grep kafka_fatal "$H_DIR/$1.log" >&2; h_fail "$2: the fatal line does not name the TLS problem ($3)"; }
    h_log "$2: exit 1, $(grep -o 'event=kafka_fatal.*' "$H_DIR/$1.log" | head -1)"
}

# 1. An unrelated CA.
tls_worker w_badca "127.0.0.1:$PORT_good" "$T/other.pem" --config "$T/secrets.properties"
expect_fatal w_badca "unrelated CA" 'certificate verify failed'

# 2. The right CA, another host's certificate.
tls_worker w_badname "127.0.0.1:$PORT_misnamed" "$T/ca.pem" \
    --kafka "ssl.key.password=$SECRET_KEY_PW" --kafka "sasl.password=$SECRET_SASL_PW"
expect_fatal w_badname "wrong host name" 'certificate verify failed'

# Control: the right CA and a certificate naming 127.0.0.1 pass the
# handshake; what follows (the listener does not speak Kafka) is an
# ordinary retriable error, and the worker keeps running until SIGTERM.
tls_worker w_good "127.0.0.1:$PORT_good" "$T/ca.pem" --kafka api.version.request.timeout.ms=1000
h_wait_for 60 "w_good: a retriable Kafka error after the handshake" b_log_has w_good 'event=kafka_error .*action=retry' ||
    h_fail "w_good saw no retriable error"
h_alive w_good || h_fail "w_good exited on a retriable error"
! b_log_has w_good 'kafka_fatal|certificate verify failed' || h_fail "w_good failed TLS with the right CA and name"
h_stop w_good
rc=0; h_wait_exit w_good 0 || rc=$?
((rc == 0)) || h_fail "w_good exited $rc on SIGTERM, not 0"
h_log "control: the right CA and name pass TLS; the non-TLS error after it is retried"

# Nothing reached the sink.
if [[ -f $B_SINK ]]; then
    n=$(sqlite3 "$B_SINK" "SELECT count(*) FROM baton_output" 2>/dev/null || echo 0)
    ((n == 0)) || h_fail "a worker that failed TLS wrote $n records to the sink"
fi

# batonctl's lag reading: bounded, non-zero, naming the TLS problem.
rc=0
b_ctl status --brokers "127.0.0.1:$PORT_good" --sink "sqlite:$B_SINK" \
    --kafka security.protocol=ssl --kafka "ssl.ca.location=$T/other.pem" \
    --kafka "sasl.password=$SECRET_SASL_PW" >"$H_DIR/ctl.out" 2>&1 || rc=$?
cat "$H_DIR/ctl.out" >&2
((rc != 0)) || h_fail "batonctl status read the lag through an unverified TLS broker"
grep -q 'certificate verify failed' "$H_DIR/ctl.out" || h_fail "batonctl did not name the TLS problem"

# --- the coordinator's rack lookup over TLS and SASL/PLAIN --------------------
# The embedded Kafka (two brokers in racks r1, r2) behind kafka_tls_proxy.py:
# one TLS listener with the good certificate, one that also wants SASL/PLAIN
# (user baton, the secret password). Only a leader reads racks, so each case
# is a coordinator that takes over from the one before (a clean stop deletes
# the leader's node at once). The coordinator takes the worker's kafka.*
# settings unchanged.
h_spawn kafka "$BATON_BIN/baton-devkafka" --topic "$B_TOPIC" --partitions 2 --brokers 2 --racks r1,r2
h_wait_for 15 "kafka ready" b_log_has kafka '^bootstrap=' || h_fail "the embedded Kafka did not start"
UPSTREAM=$(sed -n 's/^bootstrap=//p' "$H_DIR/kafka.log" | head -1 | cut -d, -f1)
export BATON_IT_SASL_PW=$SECRET_SASL_PW
PORT_tls=$(h_free_port)
PORT_sasl=$(h_free_port)
proxy() { # NAME PORT EXTRA...: TLS (good certificate) in front of the embedded Kafka
    local name=$1 port=$2
    shift 2
    h_spawn "$name" python3 "$BATON_SRC/tests/lib/kafka_tls_proxy.py" "$port" "$T/good.pem" \
        "$T/good.key" "$UPSTREAM" "$@"
    h_wait_for 15 "$name listening" b_log_has "$name" "event=listening port=$port" || h_fail "$name did not start"
}
proxy proxy_tls "$PORT_tls"
proxy proxy_sasl "$PORT_sasl" --sasl-user baton --sasl-password-env BATON_IT_SASL_PW
leader=c1
next_leader() { # NAME PORT SETTINGS...: stops the leader, starts NAME on 127.0.0.1:PORT
    local name=$1 port=$2
    shift 2
    h_stop "$leader"
    b_coord "$name" --brokers "127.0.0.1:$port" "$@"
    leader=$name
    h_wait_for 20 "$name elected" b_log_has "$name" 'event=elected' || h_fail "$name was not elected"
}
racks_read() { b_log_has "$1" "event=racks topic=$B_TOPIC partitions=2 with_rack=2"; }
racks_failed() { b_log_has "$1" "event=racks_unavailable .*$2"; }

# TLS with an unrelated CA: no racks, a clear reason, and the coordinator
# still leads.
next_leader c_badca "$PORT_tls" --kafka security.protocol=ssl --kafka "ssl.ca.location=$T/other.pem"
h_wait_for 20 "c_badca: certificate refused" racks_failed c_badca 'certificate verify failed' ||
    h_fail "c_badca did not refuse the broker's certificate"
h_alive c_badca || h_fail "c_badca exited over racks"
! b_log_has c_badca 'event=racks ' || h_fail "c_badca read racks through an unverified TLS broker"
# The right CA, another host's certificate (the s_server listener above: the
# handshake fails before any Kafka request).
next_leader c_badname "$PORT_misnamed" --kafka security.protocol=ssl --kafka "ssl.ca.location=$T/ca.pem"
h_wait_for 20 "c_badname: certificate refused" racks_failed c_badname 'certificate verify failed' ||
    h_fail "c_badname accepted a certificate for another host name"
# TLS with the right CA (the certificate names 127.0.0.1): racks.
next_leader c_tls "$PORT_tls" --kafka security.protocol=ssl --kafka "ssl.ca.location=$T/ca.pem" \
    --kafka ssl.endpoint.identification.algorithm=https
h_wait_for 20 "c_tls reads both leaders' racks over TLS" racks_read c_tls ||
    { grep racks "$H_DIR/c_tls.log" >&2; h_fail "c_tls read no racks over TLS"; }
h_log "rack lookup over TLS: $(grep -o 'event=racks .*' "$H_DIR/c_tls.log" | head -1)"
# SASL/PLAIN over TLS: a wrong password is refused ...
next_leader c_badpw "$PORT_sasl" --kafka security.protocol=sasl_ssl --kafka "ssl.ca.location=$T/ca.pem" \
    --kafka sasl.mechanism=PLAIN --kafka sasl.username=baton --kafka sasl.password=not-the-password
h_wait_for 20 "c_badpw: SASL refused" racks_failed c_badpw 'SASL authentication failed' ||
    h_fail "c_badpw: no SASL failure named"
! b_log_has c_badpw 'event=racks ' || h_fail "c_badpw read racks with a wrong password"
# ... the right one (from a --config file) reads racks.
printf 'kafka.security.protocol=sasl_ssl\nkafka.ssl.ca.location=%s\nkafka.sasl.mechanism=PLAIN\nkafka.sasl.username=baton\nkafka.sasl.password=%s\n' \
    "$T/ca.pem" "$SECRET_SASL_PW" >"$T/coord-sasl.properties"
next_leader c_sasl "$PORT_sasl" --config "$T/coord-sasl.properties"
h_wait_for 20 "c_sasl reads racks over SASL/PLAIN and TLS" racks_read c_sasl ||
    { grep racks "$H_DIR/c_sasl.log" >&2; h_fail "c_sasl read no racks over SASL/PLAIN"; }
b_log_has proxy_sasl 'event=sasl_ok' || h_fail "the SASL listener saw no authentication"
# A mechanism the lookup does not speak (librdkafka's default, GSSAPI): it
# says at start that rack preference is off, and why, and never connects.
next_leader c_gssapi "$PORT_sasl" --kafka security.protocol=sasl_ssl --kafka "ssl.ca.location=$T/ca.pem"
b_log_has c_gssapi 'event=racks_off .*reason=".*GSSAPI' || h_fail "c_gssapi did not say rack preference is off"
! b_log_has c_gssapi 'event=racks_unavailable|event=racks ' || h_fail "c_gssapi tried the rack lookup"
# A setting librdkafka refuses is a usage error, as for the worker.
rc=0
"$BATON_BIN/baton-coordinator" --zk "$ZK" --group "$B_GROUP" --kafka no.such.setting=1 >"$H_DIR/coord_bad.out" 2>&1 || rc=$?
((rc == 2)) && grep -q 'no.such.setting' "$H_DIR/coord_bad.out" || h_fail "coordinator --kafka no.such.setting: exit $rc, not 2 naming it"
h_stop c_gssapi

# Secrets: in no log line of the programs, no help text. (The harness
# writes each command line at the top of its log as "=== ... spawn": that
# line is the test's, and w_badname's flags are on it by design.)
for prog in baton-worker baton-coordinator batonctl; do
    "$BATON_BIN/$prog" --help >>"$H_DIR/help.out" 2>&1 || true
done
if cat "$H_DIR"/*.log "$H_DIR"/*.out | grep -v '^=== .* spawn ' | grep -F -e "$SECRET_KEY_PW" -e "$SECRET_SASL_PW"; then
    h_fail "a Kafka secret appears in a log or help text"
fi
grep -qF -- "$SECRET_SASL_PW" "$H_DIR/w_badname.log" || h_fail "self-check: the log filter above hides everything"
h_pass "Kafka TLS with a wrong CA or host name fails closed with a clear error; the coordinator reads racks over TLS and SASL/PLAIN, or says why not; secrets stay out of logs"
