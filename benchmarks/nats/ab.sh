#!/usr/bin/env bash
# ab.sh: compare the working tree with an older revision in the NATS harness,
# the two alternated round by round in ABBA order (old new new old ...), so
# that a drift of the machine during the runs (NATS's own rate moved by 12 %
# between consecutive runs on 2026-12-03) falls on both sides alike.
#
#   benchmarks/nats/ab.sh REV [ROUNDS] [BENCH] [harness flags...]
#   benchmarks/nats/ab.sh HEAD~1 8 'PublishSync|PublishPipelined'
#
# Each round runs the harness once per side (-benchtime 3x -chunk 2s unless
# the flags say otherwise); every harness run builds its own tree's apogee.
# It prints, per benchmark and metric, the medians of old and new, the
# change, and in how many rounds new was higher. Logs stay in $AB_DIR
# (default: a new temp dir). Run it on a quiet machine; it takes about a
# minute per round and benchmark.
set -euo pipefail
rev=${1:?usage: ab.sh REV [ROUNDS] [BENCH] [harness flags...]}
rounds=${2:-6}
bench=${3:-PublishSync|PublishPipelined}
shift $(( $# < 3 ? $# : 3 ))
flags=("$@")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dir=${AB_DIR:-$(mktemp -d /tmp/apogee-ab.XXXXXX)}
mkdir -p "$dir/old"
git -C "$root" archive "$rev" | tar -x -C "$dir/old"
(cd "$dir/old/benchmarks/nats" && go test -c -o "$dir/old.test" ./)
(cd "$here" && go test -c -o "$dir/new.test" ./)
run() { # side round
	local tree=$here
	if [ "$1" = old ]; then tree=$dir/old/benchmarks/nats; fi
	(cd "$tree" && "$dir/$1.test" -test.run '^$' -test.bench "$bench" -test.benchtime 3x -chunk 2s "${flags[@]}" \
		>"$dir/$1.$2.log" 2>&1) || { echo "ab.sh: $1 round $2 failed, see $dir/$1.$2.log" >&2; exit 1; }
}
for ((i = 1; i <= rounds; i++)); do
	if ((i % 2)); then first=old second=new; else first=new second=old; fi
	run "$first" "$i"
	run "$second" "$i"
	echo "round $i of $rounds done" >&2
done
echo "old = $rev ($(git -C "$root" rev-parse --short "$rev")), new = working tree; $rounds rounds, logs in $dir"
# One line per benchmark, metric and side: "bench metric side round value".
for side in old new; do
	for ((i = 1; i <= rounds; i++)); do
		awk -v side="$side" -v round="$i" '/^Benchmark/ && / x-nats/ {
			for (j = 3; j < NF; j++) if ($(j+1) ~ /^(x-nats|x-nats-cpu|apogee-msgs\/s|nats-msgs\/s|apogee-msgs\/srv-cpu-s|apogee-msgs\/cli-cpu-s|apogee-anon-rss-MiB)$/)
				print $1, $(j+1), side, round, $j
		}' "$dir/$side.$i.log"
	done
done | sort -k1,1 -k2,2 -k3,3 -k4,4n | awk '
	function median(a, n,   i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
	}
	{ key = $1 " " $2; v[key, $3, $4] = $5; if ($4 > n[key]) n[key] = $4; keys[key] = 1 }
	END {
		for (key in keys) {
			m = n[key]; higher = 0; no = 0; nn = 0
			for (i = 1; i <= m; i++) {
				if ((key, "old", i) in v && (key, "new", i) in v) {
					o[++no] = v[key, "old", i]; w[++nn] = v[key, "new", i]
					if (v[key, "new", i] > v[key, "old", i]) higher++
				}
			}
			if (no == 0) continue
			mo = median(o, no); mn = median(w, nn)
			printf "%-55s %-24s old %10.4g new %10.4g %+6.1f %%  new higher %d of %d\n", substr(key, 1, index(key, " ") - 1), substr(key, index(key, " ") + 1), mo, mn, mo ? 100 * (mn / mo - 1) : 0, higher, no
			delete o; delete w
		}
	}' | sort
