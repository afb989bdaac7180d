#!/bin/sh
# A 3-member etcd cluster on loopback for the tests and benchmarks.
#
#   etcd-cluster.sh start DIR [BASEPORT]   start it (again, on its data, when DIR holds one);
#                                          without BASEPORT, on free ports it picks
#   etcd-cluster.sh member DIR I           start member I (1-3) again after it was killed
#   etcd-cluster.sh stop DIR               stop every member (SIGTERM, then SIGKILL after 10s)
#
# DIR holds each member's data (mI/), log (mI.log) and pid (mI.pid), the
# base port (baseport: member I listens for clients on BASEPORT+2I-1 and
# for peers on BASEPORT+2I) and the client endpoints, comma separated
# (endpoints), which is what WC_TEST_ETCD takes. start and member wait
# until the members answer as healthy (a leader elected), or fail.
set -eu
usage="usage: etcd-cluster.sh start DIR [BASEPORT] | member DIR I | stop DIR"
cmd=${1:?$usage}
dir=${2:?$usage}

stop_pid() { # stop_pid PID: SIGTERM, then SIGKILL when it outlives 10s
	kill "$1" 2>/dev/null || return 0
	n=0
	while kill -0 "$1" 2>/dev/null; do
		n=$((n + 1))
		[ $n -lt 100 ] || { kill -9 "$1" 2>/dev/null || true; }
		sleep 0.1
	done
}

client_port() { echo $((base + 2 * $1 - 1)); }
peer_port() { echo $((base + 2 * $1)); }

start_member() { # start_member I
	i=$1 cluster=
	for j in 1 2 3; do cluster="${cluster:+$cluster,}m$j=http://127.0.0.1:$(peer_port "$j")"; done
	state=new
	[ -d "$dir/m$i" ] && state=existing
	etcd --name "m$i" --data-dir "$dir/m$i" \
		--listen-client-urls "http://127.0.0.1:$(client_port "$i")" \
		--advertise-client-urls "http://127.0.0.1:$(client_port "$i")" \
		--listen-peer-urls "http://127.0.0.1:$(peer_port "$i")" \
		--initial-advertise-peer-urls "http://127.0.0.1:$(peer_port "$i")" \
		--initial-cluster "$cluster" --initial-cluster-state "$state" \
		--initial-cluster-token "wc-test-$base" >>"$dir/m$i.log" 2>&1 &
	echo $! >"$dir/m$i.pid"
}

healthy() { # healthy ENDPOINTS: every one answers with a leader
	if command -v etcdctl >/dev/null 2>&1; then
		ETCDCTL_API=3 etcdctl --endpoints "$1" --command-timeout 2s endpoint health >/dev/null 2>&1
		return
	fi
	for ep in $(echo "$1" | tr , ' '); do
		curl -fsS --max-time 2 "http://$ep/health" 2>/dev/null | grep -q '"health":"true"' || return 1
	done
}

wait_healthy() { # wait_healthy ENDPOINTS: up to 30s
	n=0
	until healthy "$1"; do
		n=$((n + 1))
		if [ $n -ge 150 ]; then
			echo "etcd-cluster.sh: $1 did not become healthy in 30s; the logs' last lines:" >&2
			tail -n 5 "$dir"/m*.log >&2
			return 1
		fi
		sleep 0.2
	done
}

bound_failed() { # some member could not listen on its ports
	grep -qs "address already in use" "$dir"/m*.log
}

stop_all() {
	for i in 1 2 3; do
		[ -f "$dir/m$i.pid" ] || continue
		stop_pid "$(cat "$dir/m$i.pid")"
		rm -f "$dir/m$i.pid"
	done
}

case $cmd in
stop)
	stop_all
	exit 0 ;;
member)
	i=${3:?$usage}
	case $i in 1 | 2 | 3) ;; *) echo "etcd-cluster.sh: members are 1, 2 and 3" >&2; exit 2 ;; esac
	base=$(cat "$dir/baseport")
	if [ -f "$dir/m$i.pid" ] && kill -0 "$(cat "$dir/m$i.pid")" 2>/dev/null; then
		echo "etcd-cluster.sh: member $i is running" >&2
		exit 1
	fi
	start_member "$i"
	wait_healthy "127.0.0.1:$(client_port "$i")"
	exit 0 ;;
start) ;;
*) echo "etcd-cluster.sh: unknown command $cmd; $usage" >&2; exit 2 ;;
esac

command -v etcd >/dev/null 2>&1 || { echo "etcd-cluster.sh: etcd not found (apt-get install etcd-server)" >&2; exit 1; }
mkdir -p "$dir"
if [ -f "$dir/baseport" ]; then
	base=$(cat "$dir/baseport") tries=1
elif [ $# -ge 3 ]; then
	base=$3 tries=1
else
	# A random base in 20000-39990; another when a port is taken.
	base= tries=5
fi
while :; do
	if [ -z "$base" ]; then
		base=$(( (($(od -An -N2 -tu2 /dev/urandom) % 2000) * 10) + 20000 ))
	fi
	endpoints=
	for i in 1 2 3; do endpoints="${endpoints:+$endpoints,}127.0.0.1:$(client_port "$i")"; done
	for i in 1 2 3; do start_member "$i"; done
	sleep 0.5
	if bound_failed; then
		stop_all
		tries=$((tries - 1))
		if [ $tries -gt 0 ] && [ ! -f "$dir/baseport" ]; then
			rm -rf "$dir"/m1 "$dir"/m2 "$dir"/m3 "$dir"/m*.log
			base=
			continue
		fi
		echo "etcd-cluster.sh: a port from $base to $((base + 6)) is taken" >&2
		exit 1
	fi
	break
done
echo "$base" >"$dir/baseport"
echo "$endpoints" >"$dir/endpoints"
wait_healthy "$endpoints" || { stop_all; exit 1; }
