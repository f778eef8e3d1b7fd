#!/usr/bin/env bash
# Regenerates the Go code of apache.rocketmq.v2 from proto/apache/rocketmq/v2
# with pinned generators. `generate.sh --check` regenerates into a temporary
# directory and fails when the committed files differ (CI runs it).
#
# Needs protoc (Debian: protobuf-compiler, 3.21.x, which also ships the
# well-known types duration.proto and timestamp.proto). The two plugins are
# installed at the pinned versions into a cache directory.
set -euo pipefail

PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2
MODULE=github.com/apogeemq/apogee
PKG=$MODULE/internal/rmqpb

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
check=0
if [ "${1:-}" = "--check" ]; then check=1; fi

command -v protoc >/dev/null || { echo "generate.sh: protoc not found (apt-get install protobuf-compiler)" >&2; exit 1; }

bin="${XDG_CACHE_HOME:-$HOME/.cache}/apogee-protoc-gen/$PROTOC_GEN_GO_VERSION-$PROTOC_GEN_GO_GRPC_VERSION"
if [ ! -x "$bin/protoc-gen-go" ] || [ ! -x "$bin/protoc-gen-go-grpc" ]; then
	mkdir -p "$bin"
	GOBIN="$bin" go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION"
	GOBIN="$bin" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION"
fi

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

files=(apache/rocketmq/v2/definition.proto apache/rocketmq/v2/service.proto)
maps=()
for f in "${files[@]}"; do maps+=("M$f=$PKG"); done
goopts=(); grpcopts=()
for m in "${maps[@]}"; do goopts+=("--go_opt=$m"); grpcopts+=("--go-grpc_opt=$m"); done

PATH="$bin:$PATH" protoc -I "$root/proto" \
	--go_out="$out" --go_opt=paths=source_relative "${goopts[@]}" \
	--go-grpc_out="$out" --go-grpc_opt=paths=source_relative "${grpcopts[@]}" \
	"${files[@]}"

# The files land under apache/rocketmq/v2/; they live flat in internal/rmqpb.
# protoc's own version is dropped from the header so that a different
# protobuf-compiler patch release does not count as a change.
gen=(definition.pb.go service.pb.go service_grpc.pb.go)
for g in "${gen[@]}"; do
	sed -e '/^\/\/ \tprotoc  *v[0-9]/d' -e '/^\/\/ - protoc  *v[0-9]/d' "$out/apache/rocketmq/v2/$g" > "$out/$g"
done

if [ $check = 1 ]; then
	status=0
	for g in "${gen[@]}"; do
		if ! diff -u "$here/$g" "$out/$g"; then status=1; fi
	done
	if [ $status != 0 ]; then echo "generate.sh: internal/rmqpb is stale; run internal/rmqpb/generate.sh" >&2; fi
	exit $status
fi
for g in "${gen[@]}"; do cp "$out/$g" "$here/$g"; done
