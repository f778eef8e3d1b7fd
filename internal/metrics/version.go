package metrics

import (
	"strings"

	"github.com/apogeemq/apogee/internal/protocol"
)

// versionDesc renders a RocketMQ MQVersion ordinal as its enum name in
// lower case, the version label RocketMQ puts on connection gauges
// ("v4_9_4").
func versionDesc(v int32) string { return strings.ToLower(protocol.VersionDesc(v)) }
